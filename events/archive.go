package events

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// An archive is what retention removes from the log, kept in one file
// (docs/architecture/retention.md): gzip'd JSON lines, a header first,
// then each event exactly as stored (its envelope's bytes, subject,
// stream sequence, message id, the time the server stored it and the
// headers that carry its signature), then the blobs the events reference,
// then a trailer with the counts and the SHA-256 of every line before it.
// A file cut short has no trailer (or a gzip stream that does not end)
// and is refused; so is one whose lines do not hash to the trailer's sum.
// It is written to a temporary file beside its name, synced, renamed and
// its directory synced: a crash leaves the whole file or none.
//
// IMPORTANT: a stored format. ArchiveFormat names it and ArchiveVersion
// is raised when it changes; ReadArchive reads every version written.
const (
	ArchiveFormat  = "orbit-archive"
	ArchiveVersion = 1
)

// ArchiveHeader is an archive's first line.
type ArchiveHeader struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	Created time.Time `json:"created"`
	// StreamCreated is the creation time of the event stream the events
	// were read from: audit accepts unsigned events below the key's
	// start only from the stream the key was made beside.
	StreamCreated time.Time `json:"stream_created"`
	// Through is the last sequence the export considered.
	Through uint64 `json:"through"`
}

// ArchivedEvent is one event as the log stored it.
type ArchivedEvent struct {
	Seq     uint64 `json:"seq"`
	Subject string `json:"subject"`
	MsgID   string `json:"msg_id"`
	// Stored is when the server stored it.
	Stored time.Time `json:"stored"`
	// Headers are the message's own headers (MACHeader, CommandIDHeader,
	// Nats-Msg-Id): those its signature covers or carries.
	Headers map[string][]string `json:"headers,omitempty"`
	// Data is the envelope's bytes.
	Data []byte `json:"data"`
}

// archiveLine is one line of an archive: exactly one of its fields.
type archiveLine struct {
	Header *ArchiveHeader  `json:"header,omitempty"`
	Event  *ArchivedEvent  `json:"event,omitempty"`
	Blob   *archivedBlob   `json:"blob,omitempty"`
	End    *archiveTrailer `json:"end,omitempty"`
}

type archivedBlob struct {
	Digest string `json:"digest"`
	Data   []byte `json:"data"`
}

type archiveTrailer struct {
	Events int    `json:"events"`
	Blobs  int    `json:"blobs"`
	SHA256 string `json:"sha256"` // of every line before this one
}

// Archive is an archive file read whole.
type Archive struct {
	Header ArchiveHeader
	Events []ArchivedEvent
	Blobs  map[string][]byte
}

// ErrBadArchive: a file that is not a whole archive.
var ErrBadArchive = errors.New("not a whole orbit archive")

// ExportSelection is what Export archives: the events of these runs and
// tasks stored through Through (0: the log's last sequence).
type ExportSelection struct {
	Runs, Tasks []string
	Through     uint64
}

// Exported is what Export wrote.
type Exported struct {
	Path   string
	SHA256 string // of the file's bytes
	Events int
	Blobs  int
	// seqs are the sequences exported, by the subject filter of their run
	// or task (RunFilter, TaskFilter).
	seqs map[string][]uint64
}

// Has reports whether the archive holds events of the run or task whose
// subject filter (RunFilter, TaskFilter) is filter.
func (e Exported) Has(filter string) bool { return len(e.seqs[filter]) > 0 }

// Removal returns the log.removed record of what e archived of these runs
// and tasks (those it holds no event of are left out).
func (e Exported) Removal(runs, tasks []string) LogRemovedData {
	d := LogRemovedData{Version: LogRemovedVersion, Archive: filepath.Base(e.Path), ArchiveSHA256: e.SHA256}
	var all []uint64
	take := func(filter string) bool {
		seqs := e.seqs[filter]
		if len(seqs) == 0 {
			return false
		}
		all = append(all, seqs...)
		return true
	}
	for _, id := range runs {
		if take(RunFilter(id)) {
			d.Runs = append(d.Runs, id)
		}
	}
	for _, id := range tasks {
		if take(TaskFilter(id)) {
			d.Tasks = append(d.Tasks, id)
		}
	}
	slices.Sort(all)
	for _, seq := range all {
		if n := len(d.Seqs); n > 0 && d.Seqs[n-1].Through == seq-1 {
			d.Seqs[n-1].Through = seq
		} else {
			d.Seqs = append(d.Seqs, SeqRange{seq, seq})
		}
	}
	d.Count = uint64(len(all))
	if len(all) > 0 {
		d.LastSeq = all[len(all)-1]
	}
	return d
}

// blobName finds the blob digests an event's bytes name.
var blobName = regexp.MustCompile(`sha256-[0-9a-f]{64}`)

// Export writes the events sel selects, exactly as stored, and the blobs
// they reference to a new archive at path (refusing to overwrite one).
// The log is read once, in batches.
func (l *Log) Export(ctx context.Context, path string, sel ExportSelection) (Exported, error) {
	ictx, cancel := withDefaultTimeout(ctx)
	info, err := l.events.Info(ictx)
	cancel()
	if err != nil {
		return Exported{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	through := sel.Through
	if through == 0 || through > info.State.LastSeq {
		through = info.State.LastSeq
	}
	prefixes := map[string]string{} // subject prefix → filter
	out := Exported{Path: path, seqs: map[string][]uint64{}}
	for _, id := range sel.Runs {
		prefixes[strings.TrimSuffix(RunFilter(id), ">")] = RunFilter(id)
	}
	for _, id := range sel.Tasks {
		prefixes[strings.TrimSuffix(TaskFilter(id), ">")] = TaskFilter(id)
	}
	w, err := createArchive(path, ArchiveHeader{Format: ArchiveFormat, Version: ArchiveVersion, Created: time.Now().UTC(),
		StreamCreated: info.Created.UTC(), Through: through})
	if err != nil {
		return Exported{}, err
	}
	defer w.abort()
	blobs := map[string]bool{}
	if len(prefixes) > 0 {
		// Through the stream's last message, as its leader has it: a
		// replica behind it would end the scan short, and the removal
		// would leave a run half in the log. What lies past through is
		// read and left out.
		last, err := l.lastStored(ctx)
		if err != nil {
			return Exported{}, err
		}
		err = l.scanThrough(ctx, EventsStream, "", 1, last, func(seq uint64, msg *nats.Msg) error {
			if seq > through {
				return nil
			}
			subject := serverHeader(msg.Header, jetstream.SubjectHeader)
			parts := strings.SplitN(subject, ".", 5)
			if len(parts) < 5 {
				return nil
			}
			filter, ok := prefixes[strings.Join(parts[:4], ".")+"."]
			if !ok {
				return nil
			}
			hdr := map[string][]string{}
			for _, k := range []string{MACHeader, CommandIDHeader, jetstream.MsgIDHeader} {
				if v := msg.Header.Values(k); len(v) > 0 {
					hdr[k] = v
				}
			}
			for _, d := range blobName.FindAll(msg.Data, -1) {
				blobs[string(d)] = true
			}
			out.seqs[filter] = append(out.seqs[filter], seq)
			out.Events++
			return w.line(archiveLine{Event: &ArchivedEvent{Seq: seq, Subject: subject, MsgID: msg.Header.Get(jetstream.MsgIDHeader),
				Stored: storedTime(msg.Header), Headers: hdr, Data: msg.Data}})
		})
		if err != nil {
			return Exported{}, err
		}
	}
	for _, d := range slices.Sorted(maps.Keys(blobs)) {
		data, err := l.GetBlob(ctx, d)
		if errors.Is(err, ErrNotFound) {
			continue // a digest that names no blob of ours (an output's text)
		}
		if err != nil {
			return Exported{}, err
		}
		if err := w.line(archiveLine{Blob: &archivedBlob{Digest: d, Data: data}}); err != nil {
			return Exported{}, err
		}
		out.Blobs++
	}
	if out.SHA256, err = w.finish(out.Events, out.Blobs); err != nil {
		return Exported{}, err
	}
	return out, nil
}

// archiveWriter writes an archive through a temporary file.
type archiveWriter struct {
	path, tmp string
	f         *os.File
	file      hash.Hash // of the file's bytes
	buf       *bufio.Writer
	gz        *gzip.Writer
	lines     hash.Hash // of the lines written
	done      bool
}

func createArchive(path string, h ArchiveHeader) (*archiveWriter, error) {
	if _, err := os.Stat(path); err == nil {
		return nil, fmt.Errorf("archive %s: %w", path, os.ErrExist)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	w := &archiveWriter{path: path, tmp: f.Name(), f: f, file: sha256.New(), lines: sha256.New()}
	w.buf = bufio.NewWriterSize(io.MultiWriter(f, w.file), 1<<20)
	w.gz = gzip.NewWriter(w.buf)
	if err := w.line(archiveLine{Header: &h}); err != nil {
		w.abort()
		return nil, err
	}
	return w, nil
}

func (w *archiveWriter) line(l archiveLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	w.lines.Write(b)
	_, err = w.gz.Write(b)
	return err
}

// finish writes the trailer and puts the file in place, synced; it
// returns the hex SHA-256 of the file's bytes.
func (w *archiveWriter) finish(events, blobs int) (string, error) {
	t := archiveTrailer{Events: events, Blobs: blobs, SHA256: hex.EncodeToString(w.lines.Sum(nil))}
	b, err := json.Marshal(archiveLine{End: &t})
	if err != nil {
		return "", err
	}
	if _, err := w.gz.Write(append(b, '\n')); err != nil {
		return "", err
	}
	if err := w.gz.Close(); err != nil {
		return "", err
	}
	if err := w.buf.Flush(); err != nil {
		return "", err
	}
	if err := w.f.Sync(); err != nil {
		return "", err
	}
	if err := w.f.Close(); err != nil {
		return "", err
	}
	if err := os.Link(w.tmp, w.path); err != nil { // never over an archive already there
		return "", fmt.Errorf("archive %s: %w", w.path, err)
	}
	w.done = true
	_ = os.Remove(w.tmp)
	if err := syncDir(filepath.Dir(w.path)); err != nil {
		return "", err
	}
	return hex.EncodeToString(w.file.Sum(nil)), nil
}

// abort removes the temporary file of an archive not finished.
func (w *archiveWriter) abort() {
	if w.done {
		return
	}
	w.f.Close()
	os.Remove(w.tmp)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// FileSHA256 returns the hex SHA-256 of a file's bytes, as log.removed
// records an archive's.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ReadArchive reads a whole archive, refusing one cut short or changed
// (ErrBadArchive).
func ReadArchive(path string) (*Archive, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrBadArchive, path, fmt.Sprintf(format, args...))
	}
	gz, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, bad("%v", err)
	}
	r := bufio.NewReaderSize(gz, 1<<20)
	lines := sha256.New()
	a := &Archive{Blobs: map[string][]byte{}}
	for n := 1; ; n++ {
		b, err := r.ReadBytes('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, bad("it ends at line %d without its trailer: cut short", n)
			}
			return nil, bad("line %d: %v", n, err)
		}
		var l archiveLine
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, bad("line %d: %v", n, err)
		}
		switch {
		case n == 1:
			if l.Header == nil || l.Header.Format != ArchiveFormat {
				return nil, bad("no archive header")
			}
			if l.Header.Version != ArchiveVersion {
				return nil, bad("version %d, which this orbit does not read (it reads %d)", l.Header.Version, ArchiveVersion)
			}
			a.Header = *l.Header
		case l.Event != nil:
			a.Events = append(a.Events, *l.Event)
		case l.Blob != nil:
			a.Blobs[l.Blob.Digest] = l.Blob.Data
		case l.End != nil:
			if sum := hex.EncodeToString(lines.Sum(nil)); sum != l.End.SHA256 {
				return nil, bad("its lines hash to %s, its trailer says %s: changed", sum, l.End.SHA256)
			}
			if l.End.Events != len(a.Events) || l.End.Blobs != len(a.Blobs) {
				return nil, bad("%d events and %d blobs, its trailer says %d and %d", len(a.Events), len(a.Blobs), l.End.Events, l.End.Blobs)
			}
			if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
				return nil, bad("more after its trailer")
			}
			return a, nil
		default:
			return nil, bad("line %d: nothing an archive holds", n)
		}
		lines.Write(b)
	}
}
