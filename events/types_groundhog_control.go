package events

// Groundhog events of a person's control over a task's commits (DESIGN
// §12): approving held checkpoints, and rewinding the task to before a
// checkpoint.
const (
	GroundhogApproved  = "groundhog.approved"
	GroundhogRewoundTo = "groundhog.rewound_to"
)

func init() {
	register(GroundhogApproved, AggregateTask, GroundhogApprovedData{})
	register(GroundhogRewoundTo, AggregateTask, GroundhogRewoundToData{})
}

// HeldRefPrefix starts the ref where a task whose activity materializes
// on_approval holds its checkpoint commits: refs/orbit/groundhog/<task>.
const HeldRefPrefix = "refs/orbit/groundhog/"

// GroundhogApprovedData records that a task's branch was fast-forwarded to
// its held ref (`orbit groundhog approve`).
type GroundhogApprovedData struct {
	TaskBranch string `json:"task_branch"`
	HeldRef    string `json:"held_ref"`
	FromSHA    string `json:"from_sha"` // the task branch before
	ToSHA      string `json:"to_sha"`   // the held ref, the task branch after
	By         string `json:"by"`
	// Signer signed the approval (nil: one recorded before it was).
	Signer *Signer `json:"signer,omitempty"`
}

// GroundhogRewoundToData records `orbit groundhog rewind --to`: Ref (the
// task branch, or the held ref) was moved from FromSHA back to ToSHA, the
// commit before Checkpoint's. The attempts from FromDay on (the rewound
// checkpoint's and every later one's) are forgotten: memory no longer
// holds their checkpoints, and the next run does them again.
type GroundhogRewoundToData struct {
	Checkpoint string `json:"checkpoint"`
	Ref        string `json:"ref"`
	FromSHA    string `json:"from_sha"`
	ToSHA      string `json:"to_sha"`
	FromDay    int    `json:"from_day"`
	By         string `json:"by"`
	Reason     string `json:"reason,omitempty"`
	// Signer signed the rewind (nil: one recorded before it was).
	Signer *Signer `json:"signer,omitempty"`
}
