package assets

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
)

// seededFS holds the assets built into the binary: the lowest catalog layer
// (executors/, activities/, jobs/) and the files they refer to as
// seeded:<name> (fixtures/). They are documentation as much as defaults, so
// they are commented YAML that users read (orbit activity list shows them
// with layer seeded).
//
//go:embed seeded
var seededFS embed.FS

// SeededPrefix starts the name of a file built into the binary, as a Source
// (seeded:jobs/hello.yaml) or a fixture (seeded:fixtures/example_agent.json).
const SeededPrefix = "seeded:"

// SeededFile returns the content of the file built into the binary under
// name, the part after SeededPrefix (fixtures/example_agent.json). A name
// that is not a file of the seeded assets gives an error matching
// ErrNotFound. The returned slice is the caller's.
func SeededFile(name string) ([]byte, error) {
	if fs.ValidPath(name) && name != "." {
		if data, err := fs.ReadFile(seededFS, path.Join("seeded", name)); err == nil {
			return data, nil
		}
	}
	return nil, fmt.Errorf("seeded file %q %w", name, ErrNotFound)
}
