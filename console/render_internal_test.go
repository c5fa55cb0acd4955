package console

import (
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzWriteEvent: whatever the data, the stream a browser reads gives back
// one event of that name with the data, its line breaks made \n.
func FuzzWriteEvent(f *testing.F) {
	for _, seed := range []string{"", "one line", "two\nlines", "cr\rlf\r\n", "\n\n", "data: x\n\nevent: end", "<h1>\u00e9</h1>"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		rec := httptest.NewRecorder()
		writeEvent(rec, "run", data)
		stream := rec.Body.String()
		if !strings.HasSuffix(stream, "\n\n") || strings.Count(stream, "\n\n") != 1 {
			t.Fatalf("not one event: %q", stream)
		}
		// The parse of the event stream format: lines end at CR, LF or
		// CRLF; data fields are joined with LF.
		var name string
		var lines []string
		for _, line := range strings.Split(strings.TrimSuffix(stream, "\n\n"), "\n") {
			if strings.Contains(line, "\r") {
				t.Fatalf("a CR in a line: %q", line)
			}
			field, value, _ := strings.Cut(line, ": ")
			switch field {
			case "event":
				name = value
			case "data":
				lines = append(lines, value)
			default:
				t.Fatalf("field %q in %q", field, stream)
			}
		}
		want := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(data)
		if name != "run" || strings.Join(lines, "\n") != want {
			t.Fatalf("event %q data %q, want %q", name, strings.Join(lines, "\n"), want)
		}
	})
}

// FuzzShowRaw: a value is cut at valueCap on a rune boundary, and kept
// whole below it.
func FuzzShowRaw(f *testing.F) {
	f.Add("short")
	f.Add(strings.Repeat("é", valueCap))
	f.Add(strings.Repeat("a", valueCap-1) + "€")
	f.Fuzz(func(t *testing.T, s string) {
		got := showRaw(s)
		if len(s) <= valueCap {
			if got != s {
				t.Fatalf("cut a short value")
			}
			return
		}
		kept, _, found := strings.Cut(got, "\n… (")
		if !found || !strings.HasPrefix(s, kept) || len(kept) > valueCap {
			t.Fatalf("bad cut: kept %d bytes", len(kept))
		}
		if utf8.ValidString(s) && !utf8.ValidString(kept) {
			t.Fatalf("cut inside a rune")
		}
	})
}
