package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestServeOnNATSURLsThatAnswerNothing: the engine, a service whose
// servers may start after it, waits for them, saying on stderr what it
// waits for, naming every URL; stopped meanwhile, it exits 3 with the
// same.
func TestServeOnNATSURLsThatAnswerNothing(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	cmd := p.Command("serve", "--nats-url", "nats://127.0.0.1:1,nats://127.0.0.1:2")
	stderr := &testkit.SyncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	waitFor(t, "the engine to say it waits", func() bool {
		return strings.Count(stderr.String(), "waiting for the NATS servers") >= 2
	})
	assert.Contains(t, stderr.String(), "url=nats://127.0.0.1:1,nats://127.0.0.1:2")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err := cmd.Wait()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, stderr.String())
	assert.Equal(t, 3, exitErr.ExitCode(), stderr.String())
	assert.Contains(t, stderr.String(), "orbit: stopped while waiting for the NATS servers at nats://127.0.0.1:1,nats://127.0.0.1:2")
}

// TestServeWithMoreReplicasThanServers: a clear error at start naming
// both numbers, from the flag and from nats.replicas in the config.
func TestServeWithMoreReplicasThanServers(t *testing.T) {
	t.Parallel()
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	p := testkit.ClusterProject(t, c, filepath.Join(t.TempDir(), "log.key"))
	r := p.Orbit("serve", "--replicas", "4")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "nats.replicas is 4 but the NATS cluster at "+c.URLs()+" has 3 server(s)")

	p.WriteFile(".orbit/config.yaml", "nats:\n  replicas: 5\n")
	r = p.Orbit("serve")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "nats.replicas is 5 but")

	r = p.Orbit("serve", "--replicas", "9")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "--replicas 9: want 1 to 5")
}

// TestTwoEnginesStartedWithTheirClusterBothServe: docs/cluster.md's set-up
// started as an init system starts it, everything at once — three servers
// fresh, without a JetStream leader yet, and two engines at the same
// moment. Each engine waits through the cluster's start and the other's
// provisioning, says what it waits for, and serves: a run through each
// root succeeds.
func TestTwoEnginesStartedWithTheirClusterBothServe(t *testing.T) {
	t.Parallel()
	c := testkit.StartFreshCluster(t, filepath.Join(t.TempDir(), "creds"))
	ps, es := enginesOn(t, c, "hello", helloJob)
	for i, p := range ps {
		r := p.Orbit("job", "run", "hello")
		require.Equal(t, 0, r.Code, "a run through root %d: %s", i, r.String())
	}
	for i, e := range es {
		assert.Nil(t, e.Cmd.ProcessState, "engine %d exited:\n%s", i, e.Stderr())
		t.Logf("engine %d:\n%s", i, e.Stderr())
	}
}

// TestClusterSmoke is the cluster's check in make test (the heavy cluster
// tests run in make cluster-chaos): two engines on three nats-servers
// run a job of a deterministic step and a shell step that reads its
// output, through the API of the first; the node that leads the event
// stream is stopped; a run of the job through the second engine still
// succeeds, with both engines up.
func TestClusterSmoke(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	ps, es := enginesOn(t, c, "smoke", smokeJob)
	run := func(p *testkit.Project, name string) {
		t.Helper()
		r := p.Orbit("job", "run", "smoke", "--input", `{"name":"`+name+`"}`)
		require.Equal(t, 0, r.Code, r.String())
		v := runView(t, p, strings.TrimSpace(r.Stdout))
		assert.Equal(t, events.StateSuccess, v.State)
		out, _ := json.Marshal(v.Output)
		assert.Contains(t, string(out), `"stdout":"hello `+name+`\n"`)
	}
	run(ps[0], "before")
	leader, err := c.StreamLeader(ctx, events.EventsStream)
	require.NoError(t, err)
	c.Kill(leader)
	t.Logf("stopped %s, the event stream's leader", c.Nodes[leader].Name)
	run(ps[1], "after")
	assertEnginesServe(t, es)
}

// smokeJob is a deterministic step and a shell step that prints its
// output.
const smokeJob = `
schemaVersion: 2
kind: Job
metadata: {name: smoke}
spec:
  steps:
    - id: compose
      spec: {type: deterministic, action: echo, config: {message: "hello {{ input.name }}"}}
    - id: announce
      spec: {type: shell, program: echo, args: ["{{ steps.compose.output.message }}"], allowed_programs: [echo]}
`

// helloJob is one shell step.
const helloJob = `
schemaVersion: 2
kind: Job
metadata: {name: hello}
spec:
  steps:
    - id: hello
      spec: {type: shell, program: echo, args: [hello], allowed_programs: [echo]}
`

// clusterFanOutJob writes, per item, the item and the pid of the engine
// that ran it to a file of the test.
const clusterFanOutJob = `
schemaVersion: 2
kind: Job
metadata: {name: cluster_fan_out}
spec:
  steps:
    - id: per_item
      fan_out:
        items: "{{ input.items }}"
        max_workers: 4
        worker:
          id: work
          spec:
            type: shell
            program: sh
            args: ["-c", "sleep 0.3; echo \"$1 $PPID\" >> \"$2\"; printf 'did %s' $1", "sh", "{{ item }}", "{{ input.out }}"]
            allowed_programs: [sh]
      fan_in: {join: {mode: all}, collect: done}
`

// twoEngines starts a cluster and two engines on it, each in its own
// project root with the cluster's identities and one log key.
func twoEngines(t *testing.T) (*testkit.Cluster, [2]*testkit.Project, [2]*testkit.Engine) {
	t.Helper()
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	key := filepath.Join(t.TempDir(), "log.key")
	var ps [2]*testkit.Project
	var es [2]*testkit.Engine
	for i := range ps {
		ps[i] = testkit.ClusterProject(t, c, key)
		ps[i].WriteFile(".orbit/jobs/cluster_fan_out.yaml", clusterFanOutJob)
		es[i] = testkit.StartEngine(t, ps[i])
	}
	return c, ps, es
}

// sideEffects reads the lines the fan-out job wrote: item → pids of the
// engines it ran in.
func sideEffects(t *testing.T, file string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	out := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		item, dir, _ := strings.Cut(line, " ")
		out[item] = append(out[item], dir)
	}
	return out
}

// TestClusterFanOutSurvivesTheStreamLeadersLoss: two engines on a
// three-node cluster keep everything at three replicas and share a
// fan-out's steps; killing the node that leads the event stream mid
// fan-out loses nothing: the run succeeds with every item's side effect,
// and both engines' views verify against the log.
func TestClusterFanOutSurvivesTheStreamLeadersLoss(t *testing.T) {
	clusterChaos(t)
	t.Parallel()
	ctx := testkit.Context(t)
	c, ps, es := twoEngines(t)
	for _, s := range []string{events.EventsStream, events.CommandsStream, events.StepsStream, "KV_" + events.LeasesBucket, "OBJ_" + events.BlobsStore} {
		n, err := c.StreamReplicas(ctx, s)
		require.NoError(t, err)
		assert.Equal(t, 3, n, s)
	}

	id, out, items := startFanOut(t, ps[0], 16)
	waitForItems(t, out, 3)
	leader, err := c.StreamLeader(ctx, events.EventsStream)
	require.NoError(t, err)
	killed := time.Now()
	c.Kill(leader)
	t.Logf("killed %s, the leader of %s", c.Nodes[leader].Name, events.EventsStream)

	// A step whose acknowledgement the lost node took with it runs again
	// after the ack wait (30s): at least once, as after an engine's kill.
	assert.Equal(t, events.StateSuccess, waitFinished(t, ps[1], id, 90*time.Second))
	t.Logf("the run finished %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	done := sideEffects(t, out)
	perEngine := map[string]int{}
	twice := 0
	for _, item := range items {
		require.NotEmpty(t, done[item], "item %s has no side effect", item)
		twice += len(done[item]) - 1
		for _, pid := range done[item] {
			for i, e := range es {
				if pid == fmt.Sprint(e.Cmd.Process.Pid) {
					perEngine[fmt.Sprint("engine", i)]++
				}
			}
		}
	}
	t.Logf("items per engine %v, items run more than once: %d", perEngine, twice)
	assert.Len(t, perEngine, 2, "both engines ran items: %v", done)
	// Each item's input is a reference to the fan-out's step.started (step
	// protocol 4), which the workers of both engines read.
	for _, ev := range runEvents(t, ps[1], id, "--type", events.StepStarted) {
		var d events.StepStartedData
		require.NoError(t, ev.Decode(&d))
		if strings.HasPrefix(ev.StepKey, "per_item/") {
			assert.NotNil(t, d.Item, ev.StepKey)
		}
	}
	// Any engine answers the API, so each engine's views are verified
	// with the other one stopped.
	es[1].Stop()
	verifyViews(t, ps[0])
	testkit.StartEngine(t, ps[1])
	es[0].Stop()
	verifyViews(t, ps[1])
}

// verifyViews runs replay --verify on p's engine, asking again while the
// request goes unanswered (exit 3) for up to three tries.
func verifyViews(t *testing.T, p *testkit.Project) {
	t.Helper()
	var r testkit.Result
	for range 3 {
		if r = p.Orbit("replay", "--verify"); r.Code != 3 {
			break
		}
	}
	assert.Equal(t, 0, r.Code, r.String())
}

// clusterStepsJob is three steps, the second one quiet for eight seconds,
// each writing its name to a file of the test.
const clusterStepsJob = `
schemaVersion: 2
kind: Job
metadata: {name: cluster_steps}
spec:
  steps:
    - id: one
      spec: {type: shell, program: sh, args: ["-c", "echo one >> \"$1\"", "sh", "{{ input.out }}"], allowed_programs: [sh]}
    - id: two
      spec: {type: shell, program: sh, args: ["-c", "echo two >> \"$1\"; sleep 8", "sh", "{{ input.out }}"], allowed_programs: [sh]}
    - id: three
      spec: {type: shell, program: sh, args: ["-c", "echo three >> \"$1\"", "sh", "{{ input.out }}"], allowed_programs: [sh]}
`

// TestClusterJobRunFollowsThroughTheLossOfItsNode: `orbit job run` following its
// run on a cluster keeps following when the NATS node it is connected to
// is killed, that node leading the event stream, and the engines answer
// nothing for six seconds around it (stopped, as engines on a loaded
// machine are slow through the reconnections and the election: the report
// saw "did not answer engine.info" and exit 3 there). The client goes on
// through another server of its URL list, prints every step once, and
// exits with the run's result while both engines live and the run goes
// on.
func TestClusterJobRunFollowsThroughTheLossOfItsNode(t *testing.T) {
	clusterChaos(t)
	t.Parallel()
	ctx := testkit.Context(t)
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	ps, es := enginesOn(t, c, "cluster_steps", clusterStepsJob)
	out := filepath.Join(t.TempDir(), "steps.txt")
	input, _ := json.Marshal(map[string]string{"out": out})
	cmd := ps[0].Command("job", "run", "cluster_steps", "--input", string(input))
	stdout, stderr := &testkit.SyncBuffer{}, &testkit.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var node []int
	waitFor(t, "the client's node", func() bool { node = c.ClientNodes("orbit-cli"); return len(node) == 1 })
	require.NoError(t, c.MoveStreamLeader(ctx, events.EventsStream, node[0]))
	waitFor(t, "step two to run", func() bool {
		data, _ := os.ReadFile(out)
		return strings.Contains(string(data), "two")
	})
	for _, e := range es {
		require.NoError(t, e.Signal(syscall.SIGSTOP))
	}
	c.Kill(node[0])
	t.Logf("killed %s, the client's node and the event stream's leader", c.Nodes[node[0]].Name)
	time.Sleep(6 * time.Second)
	for _, e := range es {
		require.NoError(t, e.Signal(syscall.SIGCONT))
	}

	err := cmd.Wait()
	require.NoError(t, err, "stderr:\n%s", stderr.String())
	text := stderr.String()
	for _, step := range []string{"one", "two", "three"} {
		assert.Equal(t, 1, strings.Count(text, "  success   "+step+" "), "step %s ends once:\n%s", step, text)
	}
	assert.Equal(t, 1, strings.Count(text, ") started\n"), text)
	assert.Equal(t, 1, strings.Count(text, ") success in "), text)
	assertEnginesServe(t, es)
	id := strings.TrimSpace(stdout.String())
	assert.Equal(t, events.StateSuccess, waitFinished(t, ps[1], id, 30*time.Second))
	t.Logf("client:\n%s", text)
}

// TestClusterStepDeliveredThroughALostNodeRunsSoon: a step command the
// server delivered through a node that dies with it on its way never
// reaches its engine, and the server, which counts it delivered, waits for
// its ack. It is given to an engine again within seconds of the loss, not
// after engine.ack_wait_seconds (set to two minutes here), and runs once.
// The delivery is cut deterministically: one engine reaches its node
// through a proxy that swallows the first step command coming its way,
// and the node is killed then.
func TestClusterStepDeliveredThroughALostNodeRunsSoon(t *testing.T) {
	clusterChaos(t)
	t.Parallel()
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	out := filepath.Join(t.TempDir(), "ran.txt")
	ps := clusterProjects(t, c, 2, "mark", markJob)
	for _, p := range ps {
		p.WriteFile(".orbit/config.yaml", "engine:\n  ack_wait_seconds: 120\n")
	}
	const lost = 0
	proxy := testkit.StartProxy(t, strings.TrimPrefix(c.Nodes[lost].URL(), "nats://"))
	es := [2]*testkit.Engine{testkit.StartEngine(t, ps[0], "--nats-url", proxy.URL()), testkit.StartEngine(t, ps[1])}
	swallowed := proxy.Swallow("MSG " + events.StepsRoot + ".")

	var id, line, mark string
	for try := 0; line == "" && try < 10; try++ {
		mark = fmt.Sprintf("run-%d", try)
		input, _ := json.Marshal(map[string]string{"out": out, "mark": mark})
		r := ps[1].Orbit("job", "run", "mark", "--detach", "--input", string(input))
		require.Equal(t, 0, r.Code, r.String())
		id = strings.TrimSpace(r.Stdout)
		select {
		case line = <-swallowed:
		case <-time.After(5 * time.Second):
			require.Equal(t, events.StateSuccess, waitFinished(t, ps[1], id, 30*time.Second), "run %d went to the other engine", try)
		}
	}
	require.NotEmpty(t, line, "no step command went through the proxy")
	t.Logf("swallowed %q of run %s", line, id)
	killed := time.Now()
	c.Kill(lost)

	assert.Equal(t, events.StateSuccess, waitFinished(t, ps[1], id, 60*time.Second), "the step waited for its ack wait")
	t.Logf("the step ran and its run finished %s after the node's loss", time.Since(killed).Round(100*time.Millisecond))
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(data), mark+"\n"), "the step ran once:\n%s", data)
	assertEnginesServe(t, es[:])
}

// markJob writes its input's mark to a file of the test.
const markJob = `
schemaVersion: 2
kind: Job
metadata: {name: mark}
spec:
  steps:
    - id: mark
      spec: {type: shell, program: sh, args: ["-c", "echo \"$1\" >> \"$2\"", "sh", "{{ input.mark }}", "{{ input.out }}"], allowed_programs: [sh]}
`

// assertEnginesServe checks that none of the engines es has exited.
func assertEnginesServe(t *testing.T, es []*testkit.Engine) {
	t.Helper()
	for i, e := range es {
		assert.Nil(t, e.Cmd.ProcessState, "engine %d exited:\n%s", i, e.Stderr())
	}
}

// enginesOn starts two engines on cluster c together, as an init system
// would, each with a project of its own that shares the log's key and
// has the job name (its YAML job). twoEngines is the fan-out job's pair,
// started one after the other.
func enginesOn(t *testing.T, c *testkit.Cluster, name, job string) ([]*testkit.Project, []*testkit.Engine) {
	t.Helper()
	ps := clusterProjects(t, c, 2, name, job)
	return ps, testkit.StartEngines(t, ps)
}

// clusterProjects makes n project roots on cluster c that share the log's
// key, each with the job name (its YAML job).
func clusterProjects(t *testing.T, c *testkit.Cluster, n int, name, job string) []*testkit.Project {
	t.Helper()
	key := filepath.Join(t.TempDir(), "log.key")
	ps := make([]*testkit.Project, n)
	for i := range ps {
		ps[i] = testkit.ClusterProject(t, c, key)
		ps[i].WriteFile(".orbit/jobs/"+name+".yaml", job)
	}
	return ps
}
