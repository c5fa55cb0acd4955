package events

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

func testKey() *logKey {
	return &logKey{key: []byte(strings.Repeat("k", logKeyLen)), eventsFrom: 1, commandsFrom: 1}
}

func TestVerifyNamesWhatIsWrong(t *testing.T) {
	k := testKey()
	msg := &nats.Msg{Subject: "orbit.events.run.R.step.finished", Data: []byte(`{"id":"x"}`)}
	k.sign(msg, "")
	tests := []struct {
		name     string
		seq      uint64
		original bool // the stream is the one the key was made beside
		subject  string
		hdr      nats.Header
		body     string
		want     string
	}{
		{"signed", 5, true, msg.Subject, msg.Header, string(msg.Data), ""},
		{"before signing started", 2, true, msg.Subject, nats.Header{}, "anything", ""},
		{"before signing started, in a stream made again", 2, false, msg.Subject, nats.Header{}, "anything", ReasonUnsigned},
		{"unsigned", 5, true, msg.Subject, nats.Header{}, string(msg.Data), ReasonUnsigned},
		{"body changed", 5, true, msg.Subject, msg.Header, `{"id":"y"}`, ReasonBadMAC},
		{"moved to another run", 5, true, "orbit.events.run.S.step.finished", msg.Header, string(msg.Data), ReasonBadMAC},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := k.verify(3, tt.seq, func() bool { return tt.original }, tt.subject, tt.hdr, []byte(tt.body)); got != tt.want {
				t.Errorf("verify = %q, want %q", got, tt.want)
			}
		})
	}
	cmd := &nats.Msg{Subject: "orbit.cmd.step.shell.R.a.1", Data: []byte(`{}`)}
	k.sign(cmd, "id-1")
	cmd.Header.Set(CommandIDHeader, "id-2")
	if got := k.verify(1, 1, func() bool { return true }, cmd.Subject, cmd.Header, cmd.Data); got != ReasonBadMAC {
		t.Errorf("a command whose id was changed: verify = %q, want %q", got, ReasonBadMAC)
	}
	if k.msgID("a") == "a" || k.msgID("a") == k.msgID("b") {
		t.Error("msgID must be a keyed hash of the id")
	}
}

func TestSubjectRun(t *testing.T) {
	for subject, want := range map[string]string{
		"orbit.events.run.R1.step.finished": "R1",
		"orbit.cmd.step.shell.R2.x.1":       "R2",
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
		k.mac("orbit.events.run.01JD0000000000000000000000.step.finished", "", body)
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
