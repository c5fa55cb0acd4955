// Package sandbox starts a program where it cannot see what Orbit keeps
// secret: in private mount and PID namespaces whose view of the file system
// covers the paths of a Policy (the engine's state directory: its nkey
// seeds, the log key, the NATS store) and whose /proc shows its own
// processes only, and with no capabilities left. The engine starts CLI
// agents so (DESIGN §8): an agent with a shell runs as the engine's user,
// and without this could read the engine's seed and forge the log.
//
// The namespaces are made by the kernel when the program's first process
// is cloned (Wrap); the mounts are made in that process before the program
// runs, by the executable that starts it (this one, re-executed: the
// pattern of moby's reexec), which Init recognises and which then execs
// the program. So every executable that calls Wrap must call Init first
// thing in main (and a test binary in TestMain). An executable that does
// not exits at once on the unknown first argument (a Go test binary on
// its flag), and Available reports the sandbox unavailable.
//
// An engine that runs as root gives a confined program a user of its own
// besides (AgentUID, Policy.RunAs): its work trees are bound with their
// owner's ids mapped to that user, so file permissions hold as well as the
// mounts, and /proc/sys is its owner's, not the program's. Where the
// machine cannot map ids on a mount the program stays root, and its record
// says so (Unenforced).
//
// Where the namespaces cannot be made (not Linux, user namespaces turned
// off, a seccomp profile that refuses them) Available says why and the
// engine runs its CLI agents as before, saying so at start and on each
// invocation's record (ModeNone).
package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
)

// Modes, as recorded on a CLI invocation (cli.invocation.started sandbox).
const (
	// ModeMountNamespace: the program ran in private mount and PID
	// namespaces with the policy's paths covered.
	ModeMountNamespace = "mount-namespace"
	// ModeNone: the program ran as the engine's other programs do, and
	// could read what its user can.
	ModeNone = "none"
)

// argv0 is the hidden name the re-executed step runs under, and argFlag
// its first argument: a binary that does not call Init takes it for an
// unknown flag and exits.
const (
	argv0   = "orbit-sandbox"
	argFlag = "-orbit-sandbox-exec"
	// argProbe, instead of a policy, asks the step to make its mounts and
	// exit 0 (Available).
	argProbe = "probe"
)

// Policy is what a sandboxed program does not see.
type Policy struct {
	// Hide are absolute paths covered in the program's view: a directory
	// by an empty read-only tmpfs, a file by an empty one (/dev/null). A
	// path that does not exist is skipped.
	Hide []string `json:"hide"`
	// Keep are absolute paths of files the program may read although a
	// hidden directory holds them or, run as RunAs, it owns none of them
	// (the engine's files for its CLI, mode 0600): each is bound back,
	// read-only, at its own path, mapped for RunAs.
	Keep []string `json:"keep,omitempty"`
	// ReadOnly are absolute paths the program may read but not change
	// (bound on themselves, read-only), before Hide is applied: a hidden
	// path may be under one.
	ReadOnly []string `json:"read_only,omitempty"`
	// Work are absolute directories the program may read and write
	// although a hidden or read-only path holds them (its work tree: a
	// shipping run's worktree lives in the engine's state directory). Each
	// is bound back at its own path, writable, after Hide.
	Work []string `json:"work,omitempty"`
	// Confine makes the whole file system read-only to the program but
	// for Work: /tmp is private (the host's /tmp under a layer of the
	// program's own, which is gone when it ends), as is /dev/shm, and
	// HOME is a fresh directory in that /tmp; the XDG base directories
	// are unset, so they fall under it. The rest of the policy applies
	// as without it, ReadOnly last (over Work: a work tree's git
	// directory). In an engine that runs as root, Wrap also sets RunAs.
	Confine bool `json:"confine,omitempty"`
	// RunAs, when not 0, is the uid and gid the program runs as instead of
	// root's (Wrap sets AgentUID for a confined program of a root engine
	// where the machine maps ids on mounts): each Work and Keep path is
	// bound with its owner's ids mapped to it (an idmapped mount), so the
	// program writes its work tree as its owner while what it makes there
	// is the owner's on disk; a directory it must pass to reach one, its
	// working directory or the program, and may not, is mapped so too,
	// read-only (outside /tmp), or opened to it in the private /tmp.
	RunAs int `json:"run_as,omitempty"`
}

// AgentUID is the uid and gid (nobody and nogroup) a confined program of
// an engine that runs as root runs as: no file outside its mapped work
// trees is its own, no process outside its PID namespace is visible to it,
// and it holds no capability. Nobody rather than an unnamed id: the CLIs
// ask the password database who they are.
const AgentUID = 65534

// Wrap makes cmd (built by exec.Command, not started) start in the
// sandbox of p when Available, and returns the mode it will run in; cmd
// is then this executable re-executed, with the program's path and
// arguments after the policy, and its SysProcAttr set: internal/proc's
// Start keeps it. When the sandbox is not available cmd is left as it was
// and the mode is ModeNone.
func Wrap(cmd *exec.Cmd, p Policy) (string, error) {
	if ok, _ := Available(); !ok {
		return ModeNone, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("sandbox: the executable to re-execute: %w", err)
	}
	if p.Confine && os.Getuid() == 0 && probe.idmap == "" {
		p.RunAs = AgentUID
	}
	policy, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	args := append([]string{argv0, argFlag, string(policy), cmd.Path}, cmd.Args...)
	cmd.Path, cmd.Args = self, args
	cmd.SysProcAttr = sysProcAttr()
	return ModeMountNamespace, nil
}

// Unenforced says what a confined program started in mode (Wrap's) is
// not kept from, and why, for its record: everything where the machine
// has no sandbox; file permissions for an engine that runs as root on a
// machine that cannot map ids on mounts, whose programs are then root on
// the file system, where the read-only mounts alone stop their writes;
// "" otherwise.
func Unenforced(mode string) string {
	Available()
	switch {
	case mode == ModeNone:
		_, why := Available()
		if why == "" {
			why = "no policy"
		}
		return "no sandbox (" + why + "): it reads and writes what the engine's user can, the engine's keys included, and may signal the engine"
	case os.Getuid() == 0 && probe.idmap != "":
		return "file permissions: it runs as root, as the engine does, since the machine cannot give it a user of its own (" + probe.idmap + "); the read-only mounts alone stop its writes"
	}
	return ""
}

var probe struct {
	once   sync.Once
	ok     bool
	reason string
	// idmap, for an engine that runs as root, is why its confined
	// programs cannot run as AgentUID ("" when they can).
	idmap string
}

// Available reports whether Wrap can sandbox a program on this machine
// and, when it cannot, why. It finds out once per process, by starting the
// re-executed step in the namespaces with nothing to hide.
func Available() (bool, string) {
	probe.once.Do(func() { probe.ok, probe.reason, probe.idmap = available() })
	return probe.ok, probe.reason
}
