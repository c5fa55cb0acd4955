package events

// GCCollected records a collection that removed something (orbit gc
// --apply, or the retention policy's pass): the blobs, worktrees and
// branches it removed, so that the log says where they went. It is stored
// under a run id of its own (gc-…) that no run ever has: one subject per
// collection. A collection that removed nothing records nothing.
const GCCollected = "gc.collected"

func init() {
	register(GCCollected, AggregateRun, GCCollectedData{})
}

// GCCollectedData is what one collection removed.
type GCCollectedData struct {
	// Blobs are the digests of the blobs removed, BlobBytes their size.
	Blobs     []string `json:"blobs,omitempty"`
	BlobBytes int64    `json:"blob_bytes,omitempty"`
	// Worktrees are the paths of the worktrees removed.
	Worktrees []string `json:"worktrees,omitempty"`
	// Branches are the branches removed, each "<repository>:<branch>@<commit>".
	Branches []string `json:"branches,omitempty"`
	// Grace is the grace the collection kept (a Go duration), Force
	// whether it dropped archived tasks' unmerged branches.
	Grace string `json:"grace"`
	Force bool   `json:"force,omitempty"`
	// By names who asked (the requester; "retention" for the pass that
	// ends each retention pass), Signer who signed the request (nil for
	// the engine's own pass).
	By     string  `json:"by,omitempty"`
	Signer *Signer `json:"signer,omitempty"`
}
