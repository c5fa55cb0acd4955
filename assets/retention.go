package assets

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Retention defaults.
const (
	// DefaultArchiveDir is retention.archive_dir when not set, relative
	// to the project's root.
	DefaultArchiveDir = ".orbit/archive"
	// DefaultRetentionEvery is retention.every when not set.
	DefaultRetentionEvery = time.Hour
	// minRetentionEvery is the shortest retention.every accepted: a pass
	// reads the views and exports what it removes.
	minRetentionEvery = time.Minute
	// DefaultGCGrace is retention.gc_grace when not set, and orbit gc's
	// grace: how long after its run finished a worktree or branch, and
	// how long after it was stored a blob, is kept from collection.
	DefaultGCGrace = time.Hour
)

// RetentionConfig is retention (DESIGN §15): which finished runs and
// which done or archived tasks the engine archives and then removes from
// the log, where the archives go, and how often it looks. The zero value
// (no retention: block) removes nothing, ever.
type RetentionConfig struct {
	// Runs: a finished run (its whole tree finished) is eligible once it
	// ended more than OlderThan ago, or when KeepPerJob newer finished
	// runs of its job are kept; zero: that rule does not apply.
	Runs RunRetention `json:"runs,omitzero"`
	// Tasks: a task done or archived is eligible once its last event is
	// more than OlderThan old; zero: never.
	Tasks TaskRetention `json:"tasks,omitzero"`
	// ArchiveDir is where the archives are written (relative paths are
	// under the project's root).
	ArchiveDir string `json:"archive_dir,omitempty"`
	// Every is how often the engine applies the policy.
	Every time.Duration `json:"every,omitempty"`
	// GCGrace is the grace of the collection that ends each pass: what
	// finished (a blob: was stored) less than GCGrace ago is kept.
	GCGrace time.Duration `json:"gc_grace,omitempty"`
}

// RunRetention is retention.runs.
type RunRetention struct {
	OlderThan  time.Duration `json:"older_than,omitempty"`
	KeepPerJob int           `json:"keep_per_job,omitempty"`
}

// TaskRetention is retention.tasks.
type TaskRetention struct {
	OlderThan time.Duration `json:"older_than,omitempty"`
}

// Enabled reports whether the policy removes anything at all.
func (r RetentionConfig) Enabled() bool {
	return r.Runs.OlderThan > 0 || r.Runs.KeepPerJob > 0 || r.Tasks.OlderThan > 0
}

// Dir returns ArchiveDir (or its default) resolved against root.
func (r RetentionConfig) Dir(root string) string {
	dir := r.ArchiveDir
	if dir == "" {
		dir = DefaultArchiveDir
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	return dir
}

// Interval returns Every, or its default.
func (r RetentionConfig) Interval() time.Duration {
	if r.Every <= 0 {
		return DefaultRetentionEvery
	}
	return r.Every
}

// CollectGrace returns GCGrace, or its default.
func (r RetentionConfig) CollectGrace() time.Duration {
	if r.GCGrace <= 0 {
		return DefaultGCGrace
	}
	return r.GCGrace
}

// durationForm says what a retention duration may be written as.
const durationForm = "a duration such as 90m, 36h or 30d"

// ParseRetentionDuration reads a duration of the retention block: a Go
// duration (90m, 36h) or a whole number of days (30d).
func ParseRetentionDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100*365 {
			return 0, fmt.Errorf("%q is not %s", s, durationForm)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not %s", s, durationForm)
	}
	return d, nil
}

// retention decodes the retention section.
func (d *decoder) retention(m *mapping, c *RetentionConfig, lines map[string]int) {
	d.checkKeys(m, configKeys["retention"], nil)
	dur := func(m *mapping, key, zero string) time.Duration {
		n := m.get(key)
		if n == nil {
			return 0
		}
		path := child(m.path, key)
		lines[path] = n.Line
		s, ok := d.scalarString(n, path)
		if !ok {
			return 0
		}
		v, err := ParseRetentionDuration(s)
		if err != nil {
			d.addAt(n, path, err.Error())
			return 0
		}
		if v == 0 {
			d.addAt(n, path, "must be more than 0 ("+durationForm+"); "+zero)
		}
		return v
	}
	if rn := m.get("runs"); rn != nil {
		lines[child(m.path, "runs")] = rn.Line
		if rm := d.mapping(rn, child(m.path, "runs")); rm != nil {
			d.checkKeys(rm, configKeys["retention.runs"], nil)
			c.Runs.OlderThan = dur(rm, "older_than", keepAll)
			if vn := rm.get("keep_per_job"); vn != nil {
				path := child(rm.path, "keep_per_job")
				lines[path] = vn.Line
				if v, ok := d.scalarInt(vn, path); ok {
					if v < 1 {
						d.addAt(vn, path, "must be ≥ 1 (the finished runs of each job kept); leave it out to keep every run")
					} else {
						c.Runs.KeepPerJob = v
					}
				}
			}
		}
	}
	if tn := m.get("tasks"); tn != nil {
		lines[child(m.path, "tasks")] = tn.Line
		if tm := d.mapping(tn, child(m.path, "tasks")); tm != nil {
			d.checkKeys(tm, configKeys["retention.tasks"], nil)
			c.Tasks.OlderThan = dur(tm, "older_than", keepAll)
		}
	}
	c.ArchiveDir = d.setting(m, "archive_dir", lines)
	if n := m.get("every"); n != nil {
		c.Every = dur(m, "every", keepAll)
		if c.Every > 0 && c.Every < minRetentionEvery {
			d.addAt(n, child(m.path, "every"), fmt.Sprintf("%s is too often: at least %s", c.Every, minRetentionEvery))
		}
	}
	c.GCGrace = dur(m, "gc_grace", "a blob stored just before the event that names it needs a grace; leave it out for "+DefaultGCGrace.String())
}

// keepAll is what a retention duration of 0 is told to do instead.
const keepAll = "leave it out to keep everything"
