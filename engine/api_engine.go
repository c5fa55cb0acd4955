package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/failpoint"
	"github.com/orbitrun/orbit/internal/sandbox"
)

// The endpoints about the engine itself (orbit engine status, stop). They
// are meant for one engine: a client asks them at the engine's own subject
// (events.Log.RequestEngine), and a stop names the engine it means.
const (
	EndpointStatus = "engine.status"
	EndpointStop   = "engine.stop"
)

// Status answers EndpointStatus: what the engine is, and the configuration
// it runs with.
type Status struct {
	Info
	Version string `json:"version"`
	// UptimeSeconds is how long the engine has run.
	UptimeSeconds float64      `json:"uptime_seconds"`
	Config        ConfigStatus `json:"config"`
	// Now is the engine's clock when it answered (orbit doctor compares
	// the engines' clocks with it).
	Now time.Time `json:"now"`
	// Sandbox is how the engine's CLI agents are sandboxed on its machine.
	Sandbox *SandboxStatus `json:"sandbox,omitempty"`
}

// SandboxStatus says whether the engine's machine can sandbox a CLI agent
// (internal/sandbox) and what the sandbox does not enforce there, as each
// cli.invocation.started records it.
type SandboxStatus struct {
	// Mode is the mode its agents run in: mount-namespace or none.
	Mode string `json:"mode"`
	// Reason says why there is no sandbox; empty when there is one.
	Reason string `json:"reason,omitempty"`
	// Root: the engine runs as root; its agents run as nobody unless
	// Unenforced says otherwise.
	Root bool `json:"root,omitempty"`
	// Unenforced is what an agent is not kept from, and why; empty when
	// the sandbox enforces it all.
	Unenforced string `json:"unenforced,omitempty"`
}

// sandboxStatus reads the machine's sandbox as the engine's agents get it.
func sandboxStatus() *SandboxStatus {
	available, why := sandbox.Available()
	mode := sandbox.ModeMountNamespace
	if !available {
		mode = sandbox.ModeNone
	}
	return &SandboxStatus{Mode: mode, Reason: why, Root: os.Getuid() == 0, Unenforced: sandbox.Unenforced(mode)}
}

// StopRequest asks engine Engine to stop as SIGTERM would: it stops taking
// work, what runs on it is left to resume (on another engine of a cluster,
// or at the next start), and the process exits.
type StopRequest struct {
	// Engine is the id of the engine meant: an engine refuses a stop that
	// names another, so a request that reached it by way of the shared
	// subject stops no engine it was not meant for.
	Engine    string `json:"engine"`
	Requester string `json:"requester,omitempty"`
}

// Stopping answers a StopRequest: the engine is on its way out.
type Stopping struct {
	Engine string `json:"engine"`
	PID    int    `json:"pid"`
}

// FailpointClockAhead (ORBIT_FAILPOINT=clock-ahead) makes an engine
// report its clock ClockAhead ahead of the machine's in every engine.status
// it answers, as an engine on a machine whose clock runs ahead would; it
// changes nothing else the engine does. It is looked at once, when the
// engine opens.
const (
	FailpointClockAhead = "clock-ahead"
	ClockAhead          = 2 * time.Minute
)

// clockShift is how far ahead the engine reports its clock: ClockAhead
// under FailpointClockAhead, otherwise 0.
func clockShift() time.Duration {
	if failpoint.Reached(FailpointClockAhead) {
		return ClockAhead
	}
	return 0
}

func (e *Engine) engineEndpoints() map[string]events.Handler {
	return map[string]events.Handler{
		EndpointStatus: e.handle(e.apiStatus),
		EndpointStop:   e.handle(e.apiStop),
	}
}

func (e *Engine) apiStatus(context.Context, json.RawMessage) (any, error) {
	info := e.Info()
	return Status{Info: info, Version: Version, UptimeSeconds: time.Since(info.Started).Seconds(), Config: e.config.Status(), Now: time.Now().Add(e.clockShift), Sandbox: sandboxStatus()}, nil
}

// apiStop ends Run, with the answer on its way first: Run stops the API
// only once the requests it is answering are answered.
//
// Who may stop the engine is who may call its API: the project's client
// identity (the owner's key, which can already cancel every run) and keys
// admitted with serve --nkey; the reader and the agent identity cannot.
func (e *Engine) apiStop(_ context.Context, raw json.RawMessage) (any, error) {
	var req StopRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if req.Engine != e.id {
		return nil, fmt.Errorf("%w: the stop is meant for engine %s; this is engine %s", events.ErrInvalidRequest, quote(req.Engine), e.id)
	}
	e.stopMu.Lock()
	stop := e.stop
	e.stopMu.Unlock()
	e.logger.Info("stopping on request", "requester", req.Requester)
	stop(errStopped)
	return Stopping{Engine: e.id, PID: e.info.PID}, nil
}
