package main_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/doctor"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/internal/testkit"
)

// doctorReport runs orbit --json doctor with extra flags and returns its
// report and exit code.
func doctorReport(t *testing.T, p *testkit.Project, flags ...string) (doctor.Report, testkit.Result) {
	t.Helper()
	r := p.Orbit(append([]string{"--json", "doctor"}, flags...)...)
	var rep doctor.Report
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rep), r.String())
	return rep, r
}

// finding returns the report's finding of check.
func finding(t *testing.T, rep doctor.Report, check string) doctor.Finding {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Check == check {
			return f
		}
	}
	t.Fatalf("no %s finding in %+v", check, rep.Findings)
	return doctor.Finding{}
}

// assertFails checks that the report failed on check with a fix, and that
// the command exited 1.
func assertFails(t *testing.T, rep doctor.Report, r testkit.Result, check, says string) doctor.Finding {
	t.Helper()
	f := finding(t, rep, check)
	assert.Equal(t, doctor.Fail, f.Level, "%+v", f)
	assert.Contains(t, f.Detail, says)
	assert.NotEmpty(t, f.Fix)
	assert.False(t, rep.Healthy)
	assert.Equal(t, 1, r.Code, r.String())
	return f
}

func TestDoctorOnAFreshRootIsHealthy(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	r := p.Orbit("doctor")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "healthy")

	rep, r := doctorReport(t, p)
	require.Equal(t, 0, r.Code, r.String())
	assert.True(t, rep.Healthy)
	for _, check := range []string{"engine", "environment", "config", "credentials", "nats", "jetstream", "replicas", "fsync", "disk", "git", "provider_keys", "clock"} {
		f := finding(t, rep, check)
		assert.NotEqual(t, doctor.Fail, f.Level, "%+v", f)
	}
	assert.Equal(t, doctor.OK, finding(t, rep, "fsync").Level)
	assert.Equal(t, doctor.OK, finding(t, rep, "clock").Level)
	sb := finding(t, rep, "sandbox")
	if os.Getuid() == 0 {
		assert.Equal(t, doctor.OK, sb.Level, "%+v", sb)
		assert.Contains(t, sb.Detail, "as nobody", "a root engine's agents run as a user of their own")
	}
	assert.NotEqual(t, doctor.Skip, sb.Level, "%+v", sb)
}

func TestDoctorFindsAnEngineStartedFromAnotherEnvironment(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	base := p.Env
	const secret = "sk-ant-doctor-secret-value"
	p.Env = append(base, "ANTHROPIC_BASE_URL=http://127.0.0.1:9/one", "ANTHROPIC_API_KEY="+secret)
	rep, r := doctorReport(t, p)
	require.Equal(t, 0, r.Code, r.String())
	keys := finding(t, rep, "provider_keys")
	assert.Equal(t, doctor.OK, keys.Level)
	assert.Contains(t, keys.Detail, "ANTHROPIC_API_KEY")

	p.Env = append(base, "ANTHROPIC_BASE_URL=http://127.0.0.1:9/two")
	rep, r = doctorReport(t, p)
	f := assertFails(t, rep, r, "environment", "ANTHROPIC_BASE_URL")
	assert.Contains(t, f.Detail, "ANTHROPIC_API_KEY")
	assert.Contains(t, f.Fix, "orbit engine restart")
	assert.NotContains(t, r.Stdout, secret)
}

func TestDoctorFindsAConfigTheEngineHasNotLoaded(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	require.Equal(t, 0, p.Orbit("doctor").Code)

	p.WriteFile(".orbit/config.yaml", "durability: relaxed\n")
	var rep doctor.Report
	var r testkit.Result
	waitFor(t, "the engine to see the edit", func() bool {
		rep, r = doctorReport(t, p)
		return finding(t, rep, "config").Level == doctor.Fail
	})
	f := assertFails(t, rep, r, "config", "durability")
	assert.Contains(t, f.Fix, "orbit engine restart")

	p.WriteFile(".orbit/config.yaml", "durability: sometimes\n")
	waitFor(t, "the engine to refuse the edit", func() bool {
		rep, r = doctorReport(t, p)
		return strings.Contains(finding(t, rep, "config").Detail, "does not load")
	})
	assertFails(t, rep, r, "config", "sometimes")

	p.WriteFile(".orbit/config.yaml", "")
	require.Equal(t, 0, p.Orbit("engine", "restart").Code)
	_, r = doctorReport(t, p)
	assert.Equal(t, 0, r.Code, r.String())
}

// TestDoctorFindsAnEngineWhoseClockIsAhead: an engine armed with the
// clock-ahead failpoint reports its clock two minutes ahead of the
// machine's; doctor names it, says how to fix it and exits 1. The same
// root with an engine started without it is healthy.
func TestDoctorFindsAnEngineWhoseClockIsAhead(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	env := p.Env
	p.Env = append(slices.Clone(env), "ORBIT_FAILPOINT="+engine.FailpointClockAhead)
	ahead := serve(t, p)
	p.Env = env
	info, err := engine.ReadInfo(p.Root)
	require.NoError(t, err)
	id := info.Engine

	rep, r := doctorReport(t, p)
	f := assertFails(t, rep, r, "clock", "engine "+id+"'s clock is 2m0")
	assert.Contains(t, f.Fix, "NTP")
	for _, check := range []string{"engine", "environment", "config"} {
		assert.Equal(t, doctor.OK, finding(t, rep, check).Level, "only the clock is off: %+v", finding(t, rep, check))
	}

	r = p.Orbit("engine", "stop")
	require.Equal(t, 0, r.Code, r.String())
	require.NoError(t, ahead.Wait())
	rep, r = doctorReport(t, p)
	assert.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, doctor.OK, finding(t, rep, "clock").Level, "%+v", finding(t, rep, "clock"))
	info, err = engine.ReadInfo(p.Root)
	require.NoError(t, err)
	assert.NotEqual(t, id, info.Engine, "a new engine answered")
}

func TestDoctorFindsCredentialsOthersMayRead(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	require.Equal(t, 0, p.Orbit("doctor").Code)
	seed := filepath.Join(p.Root, ".orbit", "state", "creds", "client.nk")
	require.NoError(t, os.Chmod(seed, 0o644))
	rep, r := doctorReport(t, p)
	f := assertFails(t, rep, r, "credentials", seed+" has mode 0644")
	assert.Contains(t, f.Fix, "chmod 600")
}

// fakeProgram writes an executable shell script name into dir.
func fakeProgram(t *testing.T, dir, name, script string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script+"\n"), 0o755))
}

func TestDoctorFindsAnOldGitAndAnOldCLIAgent(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	require.Equal(t, 0, p.Orbit("doctor").Code)

	bin := t.TempDir()
	fakeProgram(t, bin, "git", `echo "git version 2.19.1"`)
	fakeProgram(t, bin, "claude", `echo "1.0.3 (Claude Code)"`)
	fakeProgram(t, bin, "codex", `echo "codex-cli `+testkit.CodexVersion+`"`)
	p.Env = append(p.Env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	rep, r := doctorReport(t, p)
	assertFails(t, rep, r, "git", "2.19.1 is too old")
	f := assertFails(t, rep, r, "agent:claude", "claude 1.0.3, older than the oldest Orbit supports ("+testkit.ClaudeCodeVersion+")")
	assert.Contains(t, f.Fix, "upgrade claude")
	assert.Equal(t, doctor.OK, finding(t, rep, "agent:codex").Level)
}

func TestDoctorFindsAMissingCLIAgentWhenTheBackendIsCLI(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/config.yaml", "runtime:\n  backend: cli\n")
	bin := t.TempDir()
	git, err := exec.LookPath("git")
	require.NoError(t, err)
	require.NoError(t, os.Symlink(git, filepath.Join(bin, "git")))
	p.Env = append(p.Env, "PATH="+bin)
	rep, r := doctorReport(t, p)
	f := assertFails(t, rep, r, "agent:claude", `runs "claude", which is not on PATH and runtime.backend is cli`)
	assert.Contains(t, f.Fix, "install claude")
}

func TestDoctorFindsAServerThatDoesNotFsyncBeforeItAcknowledges(t *testing.T) {
	t.Parallel()
	srv := startNATSServer(t, &server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		HTTPHost: "127.0.0.1", HTTPPort: server.RANDOM_PORT,
		StoreDir: filepath.Join(t.TempDir(), "js"), NoLog: true, NoSigs: true,
	})

	p := testkit.NewProject(t)
	p.Env = append(p.Env, "ORBIT_NATS_URL="+srv.ClientURL())
	serve(t, p)
	rep, r := doctorReport(t, p, "--nats-monitor", "http://"+srv.MonitorAddr().String())
	f := assertFails(t, rep, r, "fsync", "fsyncs every 2m0s, not before it acknowledges")
	assert.Contains(t, f.Fix, "sync_interval: always")
	assert.Equal(t, doctor.Skip, finding(t, rep, "disk").Level)
	assert.Equal(t, doctor.OK, finding(t, rep, "clock").Level)

	rep, r = doctorReport(t, p)
	assert.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, doctor.Warn, finding(t, rep, "fsync").Level)
	assert.Contains(t, finding(t, rep, "fsync").Fix, "--nats-monitor")
}

// TestDoctorFindsFreeDiskBelowTheReserve: the engine's store on a small
// tmpfs, filled until less than the 64 MiB reserve is free: the disk
// finding fails with its fix and doctor exits 1; once the space is freed
// it passes again.
func TestDoctorFindsFreeDiskBelowTheReserve(t *testing.T) {
	t.Parallel()
	p := serveOnASmallDisk(t)
	rep, r := doctorReport(t, p)
	require.Equal(t, 0, r.Code, r.String())
	assert.NotEqual(t, doctor.Fail, finding(t, rep, "disk").Level)

	junk := fillTheSmallDisk(p)
	rep, r = doctorReport(t, p)
	f := assertFails(t, rep, r, "disk", "less than the 64 MiB the engine keeps in reserve")
	assert.Contains(t, f.Fix, "orbit gc --apply")

	require.NoError(t, os.Remove(junk))
	_, r = doctorReport(t, p)
	assert.Equal(t, 0, r.Code, r.String())
}

// TestDoctorOnAClusterChecksEveryServersFsyncAndTheReplicas: an engine
// on a three-server cluster, every server fsyncing before it
// acknowledges: doctor, given each server's monitoring URL, finds the
// fsync policy and the three replicas of the streams good. One server
// restarted with sync_interval: 2m fails the fsync finding, naming that
// server alone, with its fix, and doctor exits 1. With that server down
// the event stream has two of its three replicas current, which fails too.
func TestDoctorOnAClusterChecksEveryServersFsyncAndTheReplicas(t *testing.T) {
	t.Parallel()
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	p := testkit.ClusterProject(t, c, filepath.Join(t.TempDir(), "log.key"))
	testkit.StartEngines(t, []*testkit.Project{p})
	var monitors []string
	for _, n := range c.Nodes {
		monitors = append(monitors, n.MonitorURL())
	}
	every := "--nats-monitor=" + strings.Join(monitors, ",")
	rep, r := doctorReport(t, p, every)
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, doctor.OK, finding(t, rep, "fsync").Level, "%+v", finding(t, rep, "fsync"))
	assert.Contains(t, finding(t, rep, "fsync").Detail, "n1, n2, n3")
	assert.Equal(t, doctor.OK, finding(t, rep, "replicas").Level, "%+v", finding(t, rep, "replicas"))
	assert.Contains(t, finding(t, rep, "replicas").Detail, "on 3 server(s)")

	c.Reconfigure(2, func(conf string) string {
		return strings.Replace(conf, "sync_interval: always", `sync_interval: "2m"`, 1)
	})
	rep, r = doctorReport(t, p, every)
	f := assertFails(t, rep, r, "fsync", "server n3 ("+monitors[2]+") fsyncs every 2m0s, not before it acknowledges")
	assert.NotContains(t, f.Detail, "server n1")
	assert.Contains(t, f.Fix, "sync_interval: always in the jetstream block of every server")

	c.Kill(2)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		rep, r = doctorReport(t, p)
		if finding(t, rep, "replicas").Level == doctor.Fail || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	f = assertFails(t, rep, r, "replicas", "2 of its 3 replicas current")
	assert.Contains(t, f.Fix, "bring the cluster's servers back")
}

// TestDoctorFindsAKeyItCannotRead: the project's keys are made by root
// (an engine started with sudo) and doctor runs as another user, who
// cannot read them: the credentials finding names each seed it cannot
// read, with its fix, and doctor exits 1.
func TestDoctorFindsAKeyItCannotRead(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root, to make the keys of one user and run doctor as another")
	}
	p := testkit.NewProject(t)
	require.Equal(t, 0, p.Orbit("doctor").Code)
	// Another user reaches the project (its directories are 0700 as
	// t.TempDir makes them), not the keys, which stay 0600 root's.
	for dir := p.Root; dir != "/" && dir != os.TempDir(); dir = filepath.Dir(dir) {
		require.NoError(t, os.Chmod(dir, 0o755))
	}
	require.NoError(t, filepath.WalkDir(filepath.Join(p.Root, ".orbit"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() == "creds" {
			if err == nil {
				err = fs.SkipDir
			}
			return err
		}
		if d.IsDir() {
			return os.Chmod(path, 0o755)
		}
		return nil
	}))
	// The binary's directory is the test process's, 0700 too.
	bin := filepath.Join(t.TempDir(), "orbit")
	require.NoError(t, os.Chmod(filepath.Dir(bin), 0o755))
	require.NoError(t, os.Link(p.Bin, bin))
	cmd := p.Command("--json", "doctor")
	cmd.Path, cmd.Args[0] = bin, bin
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Env = append(cmd.Env, "HOME="+t.TempDir())
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	assert.Equal(t, 1, exit.ExitCode(), stderr.String())
	var rep doctor.Report
	require.NoError(t, json.Unmarshal([]byte(stdout.String()), &rep), "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	f := finding(t, rep, "credentials")
	assert.Equal(t, doctor.Fail, f.Level, "%+v", f)
	assert.Contains(t, f.Detail, "permission denied")
	assert.Contains(t, f.Fix, "run orbit as the user who owns "+filepath.Join(p.Root, ".orbit", "state", "creds")+" (uid 0)")
	assert.False(t, rep.Healthy)
}
