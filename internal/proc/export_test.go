package proc

import (
	"context"
	"os/exec"
)

// StartMarkedOnly is Start without a cgroup: the program's leftovers are
// found by its mark alone, as on a machine that gives the engine none.
func StartMarkedOnly(ctx context.Context, cmd *exec.Cmd) (*Group, error) {
	return start(ctx, cmd, false, nil)
}

// Cgroups is the directory of this process's programs' cgroups ("" when
// it has none).
func Cgroups() string { return cgroups() }

// MaxSpares is how many emptied cgroups a process keeps for its next
// programs.
const MaxSpares = maxSpares

// CgroupDir is the program's cgroup ("" when it has none).
func (g *Group) CgroupDir() string {
	if g.cgroup == nil {
		return ""
	}
	return g.cgroup.dir
}
