package runrig

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/testkit"
)

// Engine is an orchestrator and a worker on a real log; both stop when
// the test ends, or at Stop.
type Engine struct {
	Log  *events.Log
	Root string // the workspace root of the orchestrator's steps

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start runs an orchestrator of cfg and a worker of wcfg until the test
// ends; cfg.Log is the engine's log.
func Start(t *testing.T, cfg executor.Config, wcfg activity.WorkerConfig) *Engine {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{Log: cfg.Log, Root: cfg.Root, cancel: cancel}
	orch := executor.NewOrchestrator(cfg)
	worker := activity.NewWorker(wcfg)
	for _, run := range []func(context.Context) error{worker.Run, orch.Run} {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			assert.NoError(t, run(ctx))
		}()
	}
	t.Cleanup(e.Stop)
	return e
}

// StartEngine starts an engine on log over the workspace root, resuming
// the runs active lists; its steps see ORBIT_TEST_GREETING=hi as their
// only environment variable.
func StartEngine(t *testing.T, log *events.Log, root string, active func(context.Context) ([]string, error)) *Engine {
	t.Helper()
	return Start(t, executor.Config{Log: log, Root: root, ActiveRuns: active,
		Env: func(name string) (string, bool) {
			if name == "ORBIT_TEST_GREETING" {
				return "hi", true
			}
			return "", false
		}}, activity.WorkerConfig{Log: log})
}

// Stop stops the engine and waits for its orchestrator and worker to end.
func (e *Engine) Stop() {
	e.cancel()
	e.wg.Wait()
}

// EngineLog starts a log and an engine on it, over a workspace root of
// the test's own; both stop when the test ends.
func EngineLog(t *testing.T) *events.Log {
	t.Helper()
	log := testkit.StartLog(t, events.Config{})
	StartEngine(t, log, t.TempDir(), nil)
	return log
}
