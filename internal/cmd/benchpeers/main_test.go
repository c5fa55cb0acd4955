package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMain makes the test binary Orbit's side when the driver starts it
// as `<binary> orbit -root <dir>`, as the real driver starts itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "orbit" {
		if err := orbitMain(os.Args[2:]); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestHarnessOnOrbit runs the whole harness with Orbit's side alone, the
// workloads made small: the driver starts the side, runs every workload
// in both variants on an engine through its API, and prints the table
// (and, where strace is, the fsyncs of W1, which a strict engine cannot
// do without).
func TestHarnessOnOrbit(t *testing.T) {
	cfg, err := parseFlags([]string{"-systems", "orbit", "-rounds", "2", "-steps", "10", "-items", "12", "-width", "4", "-runs", "4", "-warmup=false"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.orbit = []string{os.Args[0], "orbit"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, progress bytes.Buffer
	if err := run(ctx, cfg, &out, &progress); err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	report := out.String()
	for _, row := range []string{
		"W1: 10 sequential steps, trivial",
		"W1: 10 sequential steps, forking echo",
		"W2: 12-item fan-out, 4 at once, fan-in, trivial",
		"W2: 12-item fan-out, 4 at once, fan-in, forking echo",
		"W3: 4 concurrent runs of 3 steps, trivial",
		"W3: 4 concurrent runs of 3 steps, forking echo",
	} {
		cell := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(row) + ` \| \d+\.\d+ s \(\d+\.\d+–\d+\.\d+\)`)
		if !cell.MatchString(report) {
			t.Errorf("no timed row %q in the report:\n%s", row, report)
		}
	}
	if !strings.Contains(report, "durability strict") {
		t.Errorf("the report does not say Orbit's durability:\n%s", report)
	}
	if _, err := exec.LookPath("strace"); err == nil {
		fsyncs := regexp.MustCompile(`(?m)^\| Orbit \| (\d+) \| (\d+) \| [1-9]\d* \| \d+\.\d+ \| \d+\.\d+ s \| \d+\.\d+ s \|$`)
		if !fsyncs.MatchString(report) {
			t.Errorf("no fsync count for Orbit in the report:\n%s", report)
		}
	}
}

// TestSideFailure: a side that fails a workload is left out and named in
// the report, and the run ends in an error.
func TestSideFailure(t *testing.T) {
	script := filepath.Join(t.TempDir(), "side.sh")
	body := "#!/bin/sh\necho '@bench {\"hello\":{\"system\":\"orbit\",\"versions\":{},\"durability\":\"none\"}}'\n" +
		"read line\necho '@bench {\"answer\":{\"seconds\":0.5,\"error\":\"out of luck\"}}'\ncat >/dev/null\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseFlags([]string{"-systems", "orbit", "-rounds", "1", "-workloads", "W1", "-variants", "trivial", "-warmup=false", "-strace", "off"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.orbit = []string{script}
	var out bytes.Buffer
	err = run(context.Background(), cfg, &out, io.Discard)
	if err == nil || !strings.Contains(out.String(), "Orbit failed: orbit: out of luck") {
		t.Fatalf("run: %v, report:\n%s", err, out.String())
	}
}

func TestParseStraceSummary(t *testing.T) {
	summary := `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 54.42    0.012298         183        67           fsync
 45.58    0.010301         251        41         2 fdatasync
------ ----------- ----------- --------- --------- ----------------
100.00    0.022599         209       108         2 total
`
	path := filepath.Join(t.TempDir(), "strace.txt")
	if err := os.WriteFile(path, []byte(summary), 0o644); err != nil {
		t.Fatal(err)
	}
	calls, seconds, err := parseStraceSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	if calls["fsync"] != 67 || calls["fdatasync"] != 41 || len(calls) != 2 {
		t.Fatalf("calls = %v, want fsync 67, fdatasync 41", calls)
	}
	if seconds < 0.022598 || seconds > 0.0226 {
		t.Fatalf("seconds = %v, want 0.022599", seconds)
	}
}

func TestParseFlagsRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown system", []string{"-systems", "orbit,celery"}, `-systems: unknown "celery"`},
		{"no workload", []string{"-workloads", ","}, "-workloads: none given"},
		{"zero rounds", []string{"-rounds", "0"}, "-rounds 0: want at least 1"},
		{"strace", []string{"-strace", "maybe"}, `-strace "maybe": want auto, on or off`},
		{"argument", []string{"extra"}, `unexpected argument "extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseFlags(tc.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parseFlags(%q) = %v, want %q", tc.args, err, tc.want)
			}
		})
	}
}
