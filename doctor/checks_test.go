package doctor

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/sandbox"
)

func TestReplicasAgainstTheClustersSize(t *testing.T) {
	one := func(replicas, current int) []events.StreamHealth {
		return []events.StreamHealth{{Name: events.EventsStream, Replicas: replicas, Current: current}}
	}
	assert.Equal(t, OK, replicaFinding(one(1, 1), 1).Level)
	assert.Equal(t, OK, replicaFinding(one(3, 3), 3).Level)
	f := replicaFinding(one(1, 1), 3)
	assert.Equal(t, Warn, f.Level)
	assert.Contains(t, f.Fix, "nats.replicas: 3")
	f = replicaFinding(one(3, 2), 3)
	assert.Equal(t, Fail, f.Level)
	assert.Contains(t, f.Detail, "2 of its 3 replicas current")
	f = replicaFinding(one(3, 1), 1)
	assert.Equal(t, Fail, f.Level)
	assert.Contains(t, f.Detail, "3 replicas on a cluster of 1 server(s)")
}

func TestClockSkewBeyondTheRoundTripFails(t *testing.T) {
	asked := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func(id string, off time.Duration) EngineClock {
		return EngineClock{Engine: id, Asked: asked, Answered: asked.Add(20 * time.Millisecond), EngineNow: asked.Add(10*time.Millisecond + off)}
	}
	f := &Facts{MaxSkew: time.Second, Clocks: []EngineClock{clock("a", 0), clock("b", -900*time.Millisecond)}}
	assert.Equal(t, OK, clockFinding(f).Level)
	f.Clocks = append(f.Clocks, clock("c", 3*time.Second))
	got := clockFinding(f)
	assert.Equal(t, Fail, got.Level)
	assert.Contains(t, got.Detail, "engine c's clock is 3s off")
	assert.NotContains(t, got.Detail, "engine b's")
	assert.Contains(t, got.Fix, "NTP")
	assert.Equal(t, Skip, clockFinding(&Facts{}).Level)
}

func TestFreeDiskAgainstTheReserve(t *testing.T) {
	free := func(n uint64) *Facts {
		return &Facts{Root: t.TempDir(), FreeSpace: func(string) (uint64, error) { return n, nil }}
	}
	assert.Equal(t, OK, diskFinding(free(1<<30)).Level)
	assert.Equal(t, Warn, diskFinding(free(2*events.DefaultMinFreeBytes)).Level)
	f := diskFinding(free(events.DefaultMinFreeBytes / 2))
	assert.Equal(t, Fail, f.Level)
	assert.Contains(t, f.Detail, "32 MiB free, less than the 64 MiB")
	assert.NotEmpty(t, f.Fix)
	broken := &Facts{Root: t.TempDir(), FreeSpace: func(string) (uint64, error) { return 0, errors.New("statfs: denied") }}
	assert.Equal(t, Fail, diskFinding(broken).Level)
	assert.Equal(t, Skip, diskFinding(&Facts{ExternalURL: true}).Level)
}

func TestOlderComparesVersionsNumerically(t *testing.T) {
	assert.True(t, older("2.1.99", "2.1.331"))
	assert.False(t, older("2.1.331", "2.1.331"))
	assert.False(t, older("2.10.0", "2.9.9"))
	assert.True(t, older("0.99.0", "0.169.0"))
}

func TestSandboxWarnsWhatItDoesNotEnforce(t *testing.T) {
	status := func(sb *engine.SandboxStatus) *Facts {
		return &Facts{Status: &engine.Status{Info: engine.Info{Engine: "e1"}, Sandbox: sb}}
	}
	f := sandboxFinding(status(&engine.SandboxStatus{Mode: sandbox.ModeMountNamespace}))
	assert.Equal(t, OK, f.Level)
	assert.Empty(t, f.Fix)

	root := sandboxFinding(status(&engine.SandboxStatus{Mode: sandbox.ModeMountNamespace, Root: true,
		Unenforced: "file permissions: it runs as root, as the engine does; the read-only mounts alone stop its writes"}))
	assert.Equal(t, Warn, root.Level)
	assert.Contains(t, root.Detail, "file permissions: it runs as root")
	assert.Contains(t, root.Fix, "not root")

	none := &engine.SandboxStatus{Mode: sandbox.ModeNone, Reason: "the kernel refused the namespaces: operation not permitted",
		Unenforced: "no sandbox (the kernel refused the namespaces: operation not permitted): it reads and writes what the engine's user can"}
	f = sandboxFinding(status(none))
	assert.Equal(t, Warn, f.Level)
	assert.Contains(t, f.Detail, "without a sandbox on engine e1's machine")
	assert.Contains(t, f.Detail, "the kernel refused the namespaces")
	assert.Contains(t, f.Fix, "user.max_user_namespaces")

	cli := status(none)
	cli.Config = &assets.Config{Runtime: assets.RuntimeConfig{Backend: "cli"}}
	f = sandboxFinding(cli)
	assert.Equal(t, Fail, f.Level)
	assert.Contains(t, f.Detail, "runtime.backend is cli")

	assert.Equal(t, Skip, sandboxFinding(status(nil)).Level)
	assert.Equal(t, Skip, sandboxFinding(&Facts{}).Level)
}

func TestARetentionPolicyOnALogThatDeniesPurgesFails(t *testing.T) {
	streams := func(deny bool) []events.StreamHealth {
		return []events.StreamHealth{{Name: events.EventsStream, Replicas: 1, Current: 1, DenyPurge: deny}}
	}
	policy := &Facts{Config: &assets.Config{Retention: assets.RetentionConfig{Runs: assets.RunRetention{KeepPerJob: 5}}}}
	none := &Facts{Config: &assets.Config{}}
	f := retentionFinding(policy, streams(true))
	assert.Equal(t, Fail, f.Level)
	assert.Contains(t, f.Detail, "denies purges")
	assert.Contains(t, f.Fix, "orbit log export --before")
	assert.Contains(t, f.Fix, "orbit init --new-log")
	assert.Equal(t, OK, retentionFinding(policy, streams(false)).Level)
	assert.Equal(t, OK, retentionFinding(none, streams(true)).Level)
	assert.Equal(t, OK, retentionFinding(none, streams(false)).Level)
}
