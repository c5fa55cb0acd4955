package assets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
)

// CatalogOptions configures OpenCatalog. The zero value means no env layer
// and backend auto resolving to http.
type CatalogOptions struct {
	// ActivityDir and JobDir are the env layer (the caller reads
	// ORBIT_ACTIVITY_DIR and ORBIT_JOB_DIR); empty means no env layer.
	ActivityDir, JobDir string
	// Backend is what an agent_loop with backend: auto resolves to when jobs
	// are checked (http, cli; empty or auto means http).
	Backend string
}

// Catalog is every activity and job visible from a project root, loaded and
// validated. Names resolve first match wins: the env layer, then
// <root>/.orbit/activities and <root>/.orbit/jobs, then the seeded assets
// built into the binary.
//
// A Catalog does not change after OpenCatalog and is safe for concurrent
// use. The *Job and *Activity values it returns are shared: callers must not
// modify them.
type Catalog struct {
	backend    string
	activities map[string][]*Activity // by name, highest layer first
	jobs       map[string][]*Job
}

// Entry describes one visible asset of a catalog listing.
type Entry struct {
	Name        string   `json:"name"`
	Kind        string   `json:"kind"` // the activity's type, or the job's kind (workflow, subroutine)
	Description string   `json:"description,omitempty"`
	Source      string   `json:"source"` // the file it was read from, or seeded:<file>
	Layer       Layer    `json:"layer"`
	Shadows     []string `json:"shadows,omitempty"` // sources of same-named assets in lower layers, highest first
}

// dir is one directory of a layer.
type dir struct {
	layer   Layer
	fsys    fs.FS                    // the directory itself; nil for none
	display func(name string) string // how problems and Source name a file in it
}

// osDir is a directory on disk; "" means none. Files are shown joined to
// dirPath as the caller gave it.
func osDir(layer Layer, dirPath string) dir {
	if dirPath == "" {
		return dir{layer: layer}
	}
	return dir{layer: layer, fsys: os.DirFS(dirPath), display: func(name string) string { return filepath.Join(dirPath, name) }}
}

// seededDir is a directory of the seeded assets, shown as seeded:<sub>/<file>.
func seededDir(sub string) dir {
	fsys, err := fs.Sub(seededFS, "seeded/"+sub)
	if err != nil {
		// fs.Sub fails only on an invalid path, and sub is a constant.
		panic(err)
	}
	return dir{layer: LayerSeeded, fsys: fsys, display: func(name string) string { return "seeded:" + sub + "/" + name }}
}

// OpenCatalog reads and validates every activity and job file of every layer
// under root. Files are the *.yaml and *.yml files directly in each
// directory; a missing directory is an empty layer. Jobs resolve their
// targets across the whole catalog, first match wins.
//
// Any problem in any file, or the same name defined twice inside one layer,
// makes it return an *Error (matching ErrInvalid) listing every problem. A
// directory or file that cannot be read gives the I/O error instead.
func OpenCatalog(root string, opts CatalogOptions) (*Catalog, error) {
	switch opts.Backend {
	case "", "auto", "http", "cli":
	default:
		return nil, invalid(fmt.Sprintf("backend %q is not one of http, cli, auto", opts.Backend))
	}
	c := &Catalog{backend: opts.Backend, activities: map[string][]*Activity{}, jobs: map[string][]*Job{}}
	orbit := filepath.Join(root, ".orbit")
	activityDirs := []dir{
		osDir(LayerEnv, opts.ActivityDir),
		osDir(LayerWorkspace, filepath.Join(orbit, "activities")),
		seededDir("activities"),
	}
	jobDirs := []dir{
		osDir(LayerEnv, opts.JobDir),
		osDir(LayerWorkspace, filepath.Join(orbit, "jobs")),
		seededDir("jobs"),
	}

	var all []Problem
	for _, d := range activityDirs {
		probs, err := c.loadActivities(d)
		if err != nil {
			return nil, err
		}
		all = append(all, probs...)
	}
	for _, d := range jobDirs {
		probs, err := c.loadJobs(d)
		if err != nil {
			return nil, err
		}
		all = append(all, probs...)
	}
	if len(all) > 0 {
		return nil, &Error{Problems: all}
	}
	return c, nil
}

// assetFile is one file of a layer directory.
type assetFile struct {
	source string // how the file is shown
	data   []byte
}

// readDir returns the asset files directly in d, in name order. A missing
// directory has none.
func readDir(d dir) ([]assetFile, error) {
	if d.fsys == nil {
		return nil, nil
	}
	entries, err := fs.ReadDir(d.fsys, ".")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", d.display(""), err)
	}
	var files []assetFile
	for _, e := range entries {
		ext := path.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		data, err := fs.ReadFile(d.fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", d.display(e.Name()), err)
		}
		files = append(files, assetFile{source: d.display(e.Name()), data: data})
	}
	return files, nil
}

func (c *Catalog) loadActivities(d dir) ([]Problem, error) {
	files, err := readDir(d)
	if err != nil {
		return nil, err
	}
	var probs []Problem
	seen := map[string]string{}
	for _, f := range files {
		a, line, err := parseActivity(f.source, f.data)
		if err != nil {
			probs = append(probs, problemsOf(err)...)
			continue
		}
		if first, dup := seen[a.Name]; dup {
			probs = append(probs, duplicate(f.source, line, "activity", a.Name, first, d.layer))
			continue
		}
		seen[a.Name] = f.source
		a.Layer = d.layer
		c.activities[a.Name] = append(c.activities[a.Name], a)
	}
	return probs, nil
}

func (c *Catalog) loadJobs(d dir) ([]Problem, error) {
	files, err := readDir(d)
	if err != nil {
		return nil, err
	}
	var probs []Problem
	seen := map[string]string{}
	for _, f := range files {
		j, line, err := parseJob(f.source, f.data, c.resolve, c.backend)
		if err != nil {
			probs = append(probs, problemsOf(err)...)
			continue
		}
		if first, dup := seen[j.Name]; dup {
			probs = append(probs, duplicate(f.source, line, "job", j.Name, first, d.layer))
			continue
		}
		seen[j.Name] = f.source
		j.Layer = d.layer
		c.jobs[j.Name] = append(c.jobs[j.Name], j)
	}
	return probs, nil
}

func duplicate(source string, line int, what, name, first string, layer Layer) Problem {
	return Problem{File: source, Line: line, Path: "metadata.name",
		Reason: fmt.Sprintf("%s %q is defined twice in the %s layer: %s and %s", what, name, layer, first, source)}
}

// problemsOf returns the problems of a parse error, which is always an
// *Error.
func problemsOf(err error) []Problem {
	var e *Error
	if errors.As(err, &e) {
		return e.Problems
	}
	return []Problem{{Reason: err.Error()}}
}

// resolve looks up an activity for a job's target.
func (c *Catalog) resolve(name string) (*Activity, error) { return c.Activity(name) }

// Activity returns the activity named name from the highest layer that
// defines it, or an error matching ErrNotFound.
func (c *Catalog) Activity(name string) (*Activity, error) {
	if list := c.activities[name]; len(list) > 0 {
		return list[0], nil
	}
	return nil, fmt.Errorf("activity %q %w", name, ErrNotFound)
}

// Job returns the job named name from the highest layer that defines it, or
// an error matching ErrNotFound. A disabled job is returned like any other;
// refusing to run it is the caller's decision.
func (c *Catalog) Job(name string) (*Job, error) {
	if list := c.jobs[name]; len(list) > 0 {
		return list[0], nil
	}
	return nil, fmt.Errorf("job %q %w", name, ErrNotFound)
}

// JobFile reads and validates a job file named on the command line. Its
// targets resolve in the catalog; the job's Layer is LayerFile and its Source
// is path. Problems are an *Error matching ErrInvalid; a file that cannot be
// read gives the I/O error.
func (c *Catalog) JobFile(path string) (*Job, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading job file: %w", err)
	}
	j, _, err := parseJob(path, data, c.resolve, c.backend)
	return j, err
}

// Jobs lists every visible job, sorted by name.
func (c *Catalog) Jobs() []Entry {
	return entries(c.jobs, func(j *Job) Entry {
		return Entry{Name: j.Name, Kind: j.Spec.Kind, Description: j.Description, Source: j.Source, Layer: j.Layer}
	})
}

// Activities lists every visible activity, sorted by name. Description is
// metadata.description, else the spec's description.
func (c *Catalog) Activities() []Entry {
	return entries(c.activities, func(a *Activity) Entry {
		desc := a.Description
		if desc == "" {
			desc = a.Spec.Description
		}
		return Entry{Name: a.Name, Kind: a.Spec.Type, Description: desc, Source: a.Source, Layer: a.Layer}
	})
}

func entries[T any](byName map[string][]*T, entry func(*T) Entry) []Entry {
	out := make([]Entry, 0, len(byName))
	for _, list := range byName {
		e := entry(list[0])
		for _, lower := range list[1:] {
			e.Shadows = append(e.Shadows, entry(lower).Source)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
