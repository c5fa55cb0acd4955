package assets

import "embed"

// seededFS holds the assets built into the binary: the lowest catalog layer.
// They are documentation as much as defaults, so they are commented YAML
// that users read (orbit activity list shows them with layer seeded).
//
//go:embed seeded
var seededFS embed.FS
