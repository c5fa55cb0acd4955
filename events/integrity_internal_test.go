package events

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func testKey() *logKey {
	return &logKey{key: []byte(strings.Repeat("k", logKeyLen)), eventsFrom: 1, commandsFrom: 1}
}

func TestVerifyNamesWhatIsWrong(t *testing.T) {
	k := testKey()
	msg := &nats.Msg{Subject: "orbit.events.run.R.step.finished", Data: []byte(`{"id":"x"}`), Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, k.msgID("x"))
	k.sign(msg, "")
	clone := func() nats.Header {
		h := nats.Header{}
		for k, v := range msg.Header {
			h[k] = append([]string(nil), v...)
		}
		return h
	}
	renamed := clone()
	renamed.Set(jetstream.MsgIDHeader, "copy-1")
	twice := clone()
	twice.Add(jetstream.MsgIDHeader, "copy-1")
	// A message signed in format 1, before the log moved to format 2.
	old := nats.Header{MACHeader: []string{k.mac(false, msg.Subject, "", "", msg.Data)}}
	tests := []struct {
		name     string
		seq      uint64
		original bool // the stream is the one the key was made beside
		subject  string
		hdr      nats.Header
		body     string
		want     string
		format2  bool
	}{
		{"signed", 5, true, msg.Subject, msg.Header, string(msg.Data), "", true},
		{"before signing started", 2, true, msg.Subject, nats.Header{}, "anything", "", false},
		{"before signing started, in a stream made again", 2, false, msg.Subject, nats.Header{}, "anything", ReasonUnsigned, false},
		{"unsigned", 5, true, msg.Subject, nats.Header{}, string(msg.Data), ReasonUnsigned, false},
		{"body changed", 5, true, msg.Subject, msg.Header, `{"id":"y"}`, ReasonBadMAC, false},
		{"moved to another run", 5, true, "orbit.events.run.S.step.finished", msg.Header, string(msg.Data), ReasonBadMAC, false},
		{"copied under another message id", 5, true, msg.Subject, renamed, string(msg.Data), ReasonBadMAC, false},
		{"with a second message id", 5, true, msg.Subject, twice, string(msg.Data), ReasonBadMAC, false},
		{"format 1 before format 2 is due", 7, true, msg.Subject, old, string(msg.Data), "", false},
		{"format 1 once format 2 is due", 8, true, msg.Subject, old, string(msg.Data), ReasonUnbound, false},
		{"format 1 with a wrong MAC once format 2 is due", 8, true, msg.Subject, old, `{"id":"y"}`, ReasonBadMAC, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, format2 := k.verify(3, 8, tt.seq, func() bool { return tt.original }, tt.subject, tt.hdr, []byte(tt.body))
			if got != tt.want || format2 != tt.format2 {
				t.Errorf("verify = %q, %v; want %q, %v", got, format2, tt.want, tt.format2)
			}
		})
	}
	cmd := &nats.Msg{Subject: "orbit.cmd.step.shell.R.a.1", Data: []byte(`{}`)}
	k.sign(cmd, "id-1")
	cmd.Header.Set(CommandIDHeader, "id-2")
	if got, _ := k.verify(1, 1, 1, func() bool { return true }, cmd.Subject, cmd.Header, cmd.Data); got != ReasonBadMAC {
		t.Errorf("a command whose id was changed: verify = %q, want %q", got, ReasonBadMAC)
	}
	if k.msgID("a") == "a" || k.msgID("a") == k.msgID("b") {
		t.Error("msgID must be a keyed hash of the id")
	}
}

// An event's time must be within the allowed lag of when the server stored
// it, either way; a server that gives no time checks nothing.
func TestCheckTime(t *testing.T) {
	made := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		stored time.Time
		want   string
	}{
		{"at once", made.Add(3 * time.Millisecond), ""},
		{"a minute later", made.Add(time.Minute), ""},
		{"past the lag", made.Add(time.Minute + time.Millisecond), ProblemLate},
		{"129 s later", made.Add(129 * time.Second), ProblemLate},
		{"a little before (a clock ahead)", made.Add(-5 * time.Second), ""},
		{"long before", made.Add(-2 * time.Minute), ProblemEarly},
		{"unknown", time.Time{}, ""},
	} {
		if got := checkTime(made, tt.stored, maxLag); got != tt.want {
			t.Errorf("%s: checkTime = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestSubjectRun(t *testing.T) {
	for subject, want := range map[string]string{
		"orbit.events.run.R1.step.finished": "R1",
		"orbit.cmd.step.shell.R2.x.1":       "R2",
		"orbit.step.shell.R3.x.1":           "R3",
		"orbit.step":                        UnattributedRun,
		"orbit.events.task.T.task.created":  UnattributedRun,
		"orbit.cmd.run.request":             UnattributedRun,
		"foo":                               UnattributedRun,
	} {
		if got := SubjectRun(subject); got != want {
			t.Errorf("SubjectRun(%q) = %q, want %q", subject, got, want)
		}
	}
}

// BenchmarkMAC measures what signing or verifying costs per event of a
// typical size.
func BenchmarkMAC(b *testing.B) {
	k := testKey()
	body := []byte(strings.Repeat("x", 600))
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		k.mac(true, "orbit.events.run.01JD0000000000000000000000.step.finished", "", "k0123456789abcdef0123456789abcdef01234567", body)
	}
}

func FuzzParseLogKey(f *testing.F) {
	valid := `{"key":"` + strings.Repeat("ab", logKeyLen) + `","events_from":3,"commands_from":1,"created":"2026-01-01T00:00:00Z"}`
	for _, seed := range []string{
		valid,
		`{"key":"ab","events_from":1,"commands_from":1}`,
		`{"key":"` + strings.Repeat("zz", logKeyLen) + `","events_from":1,"commands_from":1}`,
		`{"key":"` + strings.Repeat("ab", logKeyLen) + `","events_from":0,"commands_from":1}`,
		`{"key":"` + strings.Repeat("ab", logKeyLen) + `","events_from":1}`,
		``, `null`, `[]`, `{"key":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := parseLogKey(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidLogKey) {
				t.Fatalf("rejection %v does not wrap ErrInvalidLogKey", err)
			}
			return
		}
		if len(k.key) != logKeyLen || k.eventsFrom == 0 || k.commandsFrom == 0 {
			t.Fatalf("accepted an unusable key: %+v", k)
		}
	})
}

func TestParseLogKeyNamesTheField(t *testing.T) {
	for in, want := range map[string]string{
		`{"key":"ab","events_from":1,"commands_from":1}`:                      "key: want 32 hex-encoded bytes",
		`{"key":"` + strings.Repeat("ab", logKeyLen) + `","commands_from":1}`: "events_from: want a sequence ≥ 1",
		`{"key":"` + strings.Repeat("ab", logKeyLen) + `","events_from":1}`:   "commands_from: want a sequence ≥ 1",
	} {
		_, err := parseLogKey([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseLogKey(%s) = %v, want %q", in, err, want)
		}
	}
}
