package engine

import (
	"path/filepath"

	"github.com/orbitrun/orbit/events"
)

// LogKeyPath is where the key that signs root's log is kept by default.
func LogKeyPath(root string) string {
	return filepath.Join(StateDir(root), "creds", events.LogKeyFile)
}

// logKeyFile is the log key an engine signs with (see Config.LogKeyFile).
func logKeyFile(cfg Config) string {
	if cfg.LogKeyFile != "" || cfg.NATSURL != "" {
		return cfg.LogKeyFile
	}
	return LogKeyPath(cfg.Root)
}
