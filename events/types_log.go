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
	// Version is the record's format: LogRemovedVersion (2), which names
	// no subject (each run's and task's is its prefix, see Filters); 0,
	// the first, named them in Subjects.
	Version int      `json:"version,omitempty"`
	Runs    []string `json:"runs,omitempty"`
	Tasks   []string `json:"tasks,omitempty"`
	// Subjects, in a record of the first format only, are the subject
	// filters purged (RunFilter, TaskFilter of each run and task).
	Subjects []string `json:"subjects,omitempty"`
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

// LogRemovedVersion is the format of the log.removed records made now.
const LogRemovedVersion = 2

// Filters are the subject filters the record purges, each through
// LastSeq only (an event of a removed run made after the record is not
// removed): the prefix of each run and task it names (RunFilter,
// TaskFilter), or, in a record of the first format, its Subjects.
func (d LogRemovedData) Filters() []string {
	if d.Version < LogRemovedVersion {
		return d.Subjects
	}
	out := make([]string, 0, len(d.Runs)+len(d.Tasks))
	for _, id := range d.Runs {
		out = append(out, RunFilter(id))
	}
	for _, id := range d.Tasks {
		out = append(out, TaskFilter(id))
	}
	return out
}

// SeqRange is the sequences From through Through.
type SeqRange struct {
	From    uint64 `json:"from"`
	Through uint64 `json:"through"`
}

func init() {
	register(LogRemoved, AggregateLog, LogRemovedData{})
}
