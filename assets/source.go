package assets

import (
	"fmt"
	"os"
	"strings"
)

// ReadSource returns the bytes of the file an asset was loaded from, as
// written, comments included: source is the asset's Source, a path on disk
// or SeededPrefix and the name of a file built into the binary
// (seeded:jobs/hello.yaml). A seeded name that is not a seeded file gives an
// error matching ErrNotFound; a file on disk that cannot be read, the I/O
// error. A file changed since the catalog was opened is read as it is now.
func ReadSource(source string) ([]byte, error) {
	if name, ok := strings.CutPrefix(source, SeededPrefix); ok {
		return SeededFile(name)
	}
	data, err := os.ReadFile(source)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", source, err)
	}
	return data, nil
}
