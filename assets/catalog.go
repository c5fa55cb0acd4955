package assets

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// CatalogOptions configures OpenCatalog. The zero value means no env layer,
// backend auto resolving to http, and fsProfile names not checked.
type CatalogOptions struct {
	// ActivityDir, JobDir and ExecutorDir are the env layer (the caller
	// reads ORBIT_ACTIVITY_DIR, ORBIT_JOB_DIR and ORBIT_EXECUTOR_DIR); empty
	// means no env layer.
	ActivityDir, JobDir, ExecutorDir string
	// Backend is what an agent_loop with backend: auto resolves to when the
	// catalog loads (http, cli; empty or auto means http).
	Backend string
	// FSProfiles are the filesystem profiles the project defines (see
	// Config.FSProfileNames). When not nil, an fsProfile that names none of
	// them, and is not "default", is a load error; nil accepts any name.
	FSProfiles []string
}

// Catalog is every executor, activity and job visible from a project root,
// loaded and validated. Names resolve first match wins: the env layer, then
// <root>/.orbit/executors, activities and jobs, then the seeded assets
// built into the binary.
//
// Agent specs are resolved when the catalog opens (see ActivitySpec.Backend):
// an activity's spec, and so every copy a job's target takes of it, holds
// the backend the catalog's options resolved it to and, for cli, its
// Executor.
//
// A Catalog does not change after OpenCatalog and is safe for concurrent
// use. The *Job, *Activity and *Executor values it returns are shared:
// callers must not modify them.
type Catalog struct {
	opts       loadOptions
	executors  map[string][]*Executor // by name, highest layer first
	activities map[string][]*Activity
	jobs       map[string][]*Job
	// problems are those of the files that could not be loaded; broken
	// holds them by the name each such file declares, when it could be
	// read.
	problems []Problem
	broken   map[string][]Problem
}

// Entry describes one visible asset of a catalog listing.
type Entry struct {
	Name        string   `json:"name"`
	Kind        string   `json:"kind"` // the activity's type, the job's kind (workflow, subroutine), or the executor's output
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

// OpenCatalog reads and validates every executor, activity and job file of
// every layer under root. Files are the *.yaml and *.yml files directly in
// each directory; a missing directory is an empty layer. Executors load
// first, then activities (whose agent specs resolve against the executors),
// then jobs (whose targets resolve across the whole catalog, first match
// wins).
//
// A file with a problem (or a second definition of a name inside one layer,
// or a job that always invokes itself) is left out and its problems are
// kept (see Problems): the rest of the catalog loads, so that one broken
// file stops only what depends on it. A directory or file that cannot be
// read gives the I/O error instead.
func OpenCatalog(root string, opts CatalogOptions) (*Catalog, error) {
	backend := BackendHTTP
	switch opts.Backend {
	case "", backendAuto, BackendHTTP:
	case BackendCLI:
		backend = BackendCLI
	default:
		return nil, invalid(fmt.Sprintf("backend %q is not one of http, cli, auto", opts.Backend))
	}
	c := &Catalog{executors: map[string][]*Executor{}, activities: map[string][]*Activity{}, jobs: map[string][]*Job{},
		broken: map[string][]Problem{}}
	orbit := filepath.Join(root, ".orbit")
	layers := func(envDir, sub string) []dir {
		return []dir{osDir(LayerEnv, envDir), osDir(LayerWorkspace, filepath.Join(orbit, sub)), seededDir(sub)}
	}

	collect := func(probs []brokenFile, err error) error {
		for _, b := range probs {
			c.problems = append(c.problems, b.problems...)
			if b.name != "" {
				c.broken[b.name] = append(c.broken[b.name], b.problems...)
			}
		}
		return err
	}
	for _, d := range layers(opts.ExecutorDir, "executors") {
		if err := collect(loadLayer(d, "executor", c.executors, parseExecutorFile)); err != nil {
			return nil, err
		}
	}
	c.opts = loadOptions{backend: backend, executors: visible(c.executors)}
	if opts.FSProfiles != nil {
		c.opts.fsProfiles = slices.Clone(opts.FSProfiles)
	}
	for _, d := range layers(opts.ActivityDir, "activities") {
		if err := collect(loadLayer(d, "activity", c.activities, c.parseActivityFile)); err != nil {
			return nil, err
		}
	}
	for _, d := range layers(opts.JobDir, "jobs") {
		if err := collect(loadLayer(d, "job", c.jobs, c.parseJobFile)); err != nil {
			return nil, err
		}
	}
	cycles := invokeCycles(visible(c.jobs))
	for _, name := range slices.Sorted(maps.Keys(cycles)) {
		p := cycles[name]
		c.problems = append(c.problems, p)
		c.broken[name] = append(c.broken[name], p)
		delete(c.jobs, name)
	}
	return c, nil
}

// Problems returns the problems of every file the catalog left out, in
// layer and file order; nil when every file loaded.
func (c *Catalog) Problems() []Problem { return c.problems }

// Backend is what backend: auto resolved to in this catalog's agent specs:
// BackendHTTP or BackendCLI.
func (c *Catalog) Backend() string { return c.opts.backend }

// Err returns the problems as an *Error (matching ErrInvalid), nil when
// every file loaded.
func (c *Catalog) Err() error {
	if len(c.problems) == 0 {
		return nil
	}
	return &Error{Problems: c.problems}
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
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") || hidden(e.Name()) {
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

// hidden reports whether a file name is a dotfile or an editor's backup or
// lock file, which are never assets.
func hidden(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "#") || strings.HasSuffix(name, "~")
}

// brokenFile is a file of a layer that was left out, with the name it
// declares when that could be read.
type brokenFile struct {
	name     string
	problems []Problem
}

// loadLayer reads the asset files of one layer directory with parse (which
// returns an asset, its name and the line of its name) and adds each asset
// to byName after those of higher layers. A file that does not parse is
// returned as broken; a name defined twice in the layer is a problem
// naming both files, and the second definition is left out.
func loadLayer[T any](d dir, what string, byName map[string][]*T, parse func(assetFile, Layer) (*T, string, int, error)) ([]brokenFile, error) {
	files, err := readDir(d)
	if err != nil {
		return nil, err
	}
	var broken []brokenFile
	seen := map[string]string{}
	for _, f := range files {
		a, name, line, err := parse(f, d.layer)
		if err != nil {
			broken = append(broken, brokenFile{name: declaredName(f.data), problems: problemsOf(err)})
			continue
		}
		if first, dup := seen[name]; dup {
			broken = append(broken, brokenFile{problems: []Problem{duplicate(f.source, line, what, name, first, d.layer)}})
			continue
		}
		seen[name] = f.source
		byName[name] = append(byName[name], a)
	}
	return broken, nil
}

// declaredName returns the metadata.name a file that does not load
// declares, "" when even that cannot be read.
func declaredName(data []byte) string {
	var doc struct {
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return ""
	}
	return doc.Metadata.Name
}

// parseActivityFile and parseJobFile parse a file of a layer with the
// catalog's options, in the form loadLayer wants.
func (c *Catalog) parseActivityFile(f assetFile, layer Layer) (*Activity, string, int, error) {
	a, line, err := parseActivity(f.source, f.data, &c.opts)
	if err != nil {
		return nil, "", 0, err
	}
	a.Layer = layer
	return a, a.Name, line, nil
}

func (c *Catalog) parseJobFile(f assetFile, layer Layer) (*Job, string, int, error) {
	j, line, err := parseJob(f.source, f.data, c.resolve, &c.opts)
	if err != nil {
		return nil, "", 0, err
	}
	j.Layer = layer
	return j, j.Name, line, nil
}

// visible returns the asset each name resolves to: its highest layer's.
func visible[T any](byName map[string][]*T) map[string]*T {
	out := make(map[string]*T, len(byName))
	for name, list := range byName {
		out[name] = list[0]
	}
	return out
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
	return nil, c.missing("activity", "activities", name)
}

// Job returns the job named name from the highest layer that defines it.
// A job whose file was left out gives its problems (an *Error matching
// ErrInvalid); a name nothing defines, an error matching ErrNotFound. A
// disabled job is returned like any other; refusing to run it is the
// caller's decision.
func (c *Catalog) Job(name string) (*Job, error) {
	if list := c.jobs[name]; len(list) > 0 {
		return list[0], nil
	}
	return nil, c.missing("job", "jobs", name)
}

// missing is the error for a name the catalog has no asset of: the
// problems of a file that declares it and was left out, else not found,
// worded as the CLI's other "no …" answers are: no job "x" (orbit job
// list lists the jobs).
func (c *Catalog) missing(what, plural, name string) error {
	if probs := c.broken[name]; len(probs) > 0 {
		return &Error{Problems: probs}
	}
	msg := fmt.Sprintf("no %s %q (orbit %s list lists the %s)", what, name, what, plural)
	if len(c.problems) > 0 {
		lines := make([]string, len(c.problems))
		for i, p := range c.problems {
			lines[i] = p.String()
		}
		msg += "; some catalog files could not be loaded, and one may define it:\n" + strings.Join(lines, "\n")
	}
	return &notFoundError{msg: msg}
}

// notFoundError is a name no layer defines, in the words the user reads;
// it matches ErrNotFound.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

func (e *notFoundError) Unwrap() error { return ErrNotFound }

// JobFile reads and validates a job file named on the command line. Its
// targets resolve in the catalog and its agent specs with the catalog's
// options; the job's Layer is LayerFile and its Source is path. Problems are
// an *Error matching ErrInvalid; a file that cannot be read gives the I/O
// error.
func (c *Catalog) JobFile(path string) (*Job, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading job file: %w", err)
	}
	j, _, err := parseJob(path, data, c.resolve, &c.opts)
	return j, err
}

// Executor returns the executor named name from the highest layer that
// defines it, or an error matching ErrNotFound.
func (c *Catalog) Executor(name string) (*Executor, error) {
	if list := c.executors[name]; len(list) > 0 {
		return list[0], nil
	}
	return nil, c.missing("executor", "executors", name)
}

// Executors lists every visible executor, sorted by name. Kind is the
// executor's output format.
func (c *Catalog) Executors() []Entry {
	return entries(c.executors, func(e *Executor) Entry {
		return Entry{Name: e.Name, Kind: e.Spec.Output, Description: e.Description, Source: e.Source, Layer: e.Layer}
	})
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
