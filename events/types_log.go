package events

// AggregateLog is the aggregate of the records the log keeps about itself:
// orbit.events.log.<record id>.<type>.
const AggregateLog = "log"

// LogRemoved records that the engine's retention removed the events of
// finished runs and tasks from the log (DESIGN §15), after it archived
// them: which runs and tasks, the subjects purged, exactly which
// sequences, and the archive that holds them. It is appended before the
// purge, so a removal the log does not explain is one nobody recorded:
// orbit audit reports it (see Audit). Stored under its own id:
// orbit.events.log.<id>.log.removed.
const LogRemoved = "log.removed"

// LogRemovedData is the payload of log.removed.
type LogRemovedData struct {
	Runs  []string `json:"runs,omitempty"`
	Tasks []string `json:"tasks,omitempty"`
	// Subjects are the subject filters purged (RunFilter, TaskFilter of
	// each), each through LastSeq only: an event of a removed run made
	// after the record is not removed.
	Subjects []string `json:"subjects"`
	// Seqs are the sequences removed, as ranges, and Count how many.
	Seqs  []SeqRange `json:"seqs"`
	Count uint64     `json:"count"`
	// LastSeq is the highest sequence removed.
	LastSeq uint64 `json:"last_seq"`
	// Archive is the archive file's name, ArchiveSHA256 the hex SHA-256
	// of its bytes.
	Archive       string `json:"archive"`
	ArchiveSHA256 string `json:"archive_sha256"`
}

// SeqRange is the sequences From through Through.
type SeqRange struct {
	From    uint64 `json:"from"`
	Through uint64 `json:"through"`
}

func init() {
	register(LogRemoved, AggregateLog, LogRemovedData{})
}
