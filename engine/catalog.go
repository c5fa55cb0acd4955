package engine

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/orbitrun/orbit/assets"
)

// catalogCache keeps the project's catalog open for the lookups of
// job.invoke, and opens it again only when a file it is read from has
// changed: opening reads, parses and validates every asset file, which a
// loop of child runs did once per child.
//
// Whether anything changed is told by a listing of the catalog's
// directories — each entry's name, size, modification and change times,
// and inode — and the hash of the project configuration the engine runs
// with (see projectConfig): a file written, added, removed, renamed over
// or touched, or the configuration reloaded, changes the listing.
//
// A catalog is kept for each backend that backend: auto is asked to
// resolve to: the config's, and the one a run was requested with
// (--backend) for its children.
//
// It is safe for concurrent use; lookups wait while the catalog is opened.
type catalogCache struct {
	root   string
	config *projectConfig
	// dirs are the env layer's directories (ORBIT_ACTIVITY_DIR, …), read
	// once: the engine's environment does not change.
	dirs   assets.CatalogOptions
	logger *slog.Logger

	mu    sync.Mutex
	open  map[string]openCatalog // by the backend asked for ("": the config's)
	opens int                    // how many times a catalog was opened, for tests
}

// openCatalog is a catalog and the listing it was opened with.
type openCatalog struct {
	listing string
	cat     *assets.Catalog
}

// newCatalogCache returns a cache of root's catalog, opened with the
// project configuration config has (logger nil: discard).
func newCatalogCache(root string, config *projectConfig, logger *slog.Logger) *catalogCache {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &catalogCache{
		root:   root,
		config: config,
		dirs: assets.CatalogOptions{
			ActivityDir: os.Getenv("ORBIT_ACTIVITY_DIR"),
			JobDir:      os.Getenv("ORBIT_JOB_DIR"),
			ExecutorDir: os.Getenv("ORBIT_EXECUTOR_DIR"),
		},
		logger: logger,
		open:   map[string]openCatalog{},
	}
}

// job looks a job up in the catalog as the files are now, with backend:
// auto resolved to backend ("": the config's runtime.backend).
func (c *catalogCache) job(name, backend string) (*assets.Job, error) {
	cat, err := c.catalog(backend)
	if err != nil {
		return nil, err
	}
	return cat.Job(name)
}

// catalog returns the open catalog for backend, opening it again when the
// listing of its files differs from the one it was opened with. A catalog
// that fails to open is not kept: the next lookup tries again.
func (c *catalogCache) catalog(backend string) (*assets.Catalog, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg, hash := c.config.current()
	listing, err := c.list()
	if err != nil {
		return nil, err
	}
	listing = "config: " + hash + "\n" + listing
	held, ok := c.open[backend]
	if ok && listing == held.listing {
		return held.cat, nil
	}
	opts := c.dirs
	opts.Backend = cmp.Or(backend, cfg.Runtime.Backend)
	opts.FSProfiles = cfg.FSProfileNames()
	cat, err := assets.OpenCatalog(c.root, opts)
	if err != nil {
		delete(c.open, backend)
		return nil, err
	}
	if ok {
		c.logger.Debug("a catalog file changed; reopened the catalog", "backend", opts.Backend)
	}
	c.open[backend] = openCatalog{listing: listing, cat: cat}
	c.opens++
	return cat, nil
}

// list returns the listing of every file the catalog is read from (see
// catalogCache).
func (c *catalogCache) list() (string, error) {
	orbit := filepath.Join(c.root, ".orbit")
	var b strings.Builder
	for _, dir := range []string{
		c.dirs.ExecutorDir, c.dirs.ActivityDir, c.dirs.JobDir,
		filepath.Join(orbit, "executors"), filepath.Join(orbit, "activities"), filepath.Join(orbit, "jobs"),
	} {
		if dir == "" {
			continue
		}
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(&b, "%s: none\n", dir)
			continue
		}
		if err != nil {
			return "", err
		}
		for _, e := range entries {
			if err := listFile(&b, filepath.Join(dir, e.Name())); err != nil {
				return "", err
			}
		}
	}
	return b.String(), nil
}

// listFile writes one line of a listing for path (followed if it is a
// symbolic link, as the catalog reads it).
func listFile(b *strings.Builder, path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(b, "%s: none\n", path)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "%s: %d %d %s", path, fi.Size(), fi.ModTime().UnixNano(), fi.Mode())
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		fmt.Fprintf(b, " %d %d.%d", st.Ino, st.Ctim.Sec, st.Ctim.Nsec)
	}
	b.WriteByte('\n')
	return nil
}
