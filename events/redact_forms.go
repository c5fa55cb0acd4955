package events

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
)

// The forms a secret is looked for in (see secretForms), and how much of
// one must appear to be redacted.
const (
	// partialRun is how many consecutive characters of a form are redacted
	// wherever they appear: a prefix, a suffix or a middle of a secret cut
	// out of it (cut -c1-20) as well as the whole. A form shorter than it
	// is redacted only whole.
	partialRun = 16
	// minEncodedRun is the shortest encoded form looked for: four base64
	// characters (three bytes of a short secret, at one alignment) would
	// be found in ordinary text.
	minEncodedRun = 8
)

// secretForm is one text a secret may appear as, and how many consecutive
// characters of it must appear for them to be redacted.
type secretForm struct {
	text []byte
	need int
	// notJSON: the form is no JSON string's content (a raw secret with a
	// quote, a backslash or a control character): a JSON document holds
	// it escaped, as another form, and a run of it there would span its
	// strings, whose structure replacing it would break.
	notJSON bool
	// cut[k] says a run may begin or end at text[k]: not inside one of
	// the form's JSON escapes (\" \\ \u00e9), whose characters alone
	// mean something else in a document (a quote that ends a string).
	// Nil: anywhere.
	cut []bool
}

// secretForms returns the forms the secret s is looked for in:
//
//   - s itself and, when it differs, s as a JSON string holds it;
//   - s in hexadecimal, lower and upper case;
//   - s in base64, standard and URL-safe, padded: whole, and at each of
//     the three alignments it can have inside a longer base64 text (the
//     encoding of s less its first one or two bytes, which share their
//     characters with the text before it). Without padding, a form is a
//     prefix of its padded one.
//
// Each form counts from partialRun consecutive characters on (all of it
// when shorter); encoded forms shorter than minEncodedRun are left out.
func secretForms(s []byte) []secretForm {
	var forms []secretForm
	// add looks for text from need characters on (all of it when fewer),
	// unless it is shorter than min.
	add := func(text []byte, need, min int) {
		if len(text) < min {
			return
		}
		for _, f := range forms {
			if bytes.Equal(f.text, text) {
				return
			}
		}
		f := secretForm{text: text, need: minInt(need, partialRun), notJSON: !json.Valid(append(append([]byte{'"'}, text...), '"'))}
		if !f.notJSON && bytes.IndexByte(text, '\\') >= 0 {
			f.cut = escapeCuts(text)
		}
		forms = append(forms, f)
	}
	add(s, len(s), minSecretLen)
	if quoted, err := json.Marshal(string(s)); err == nil {
		e := quoted[1 : len(quoted)-1]
		add(e, len(e), minSecretLen)
	}
	lower := []byte(hex.EncodeToString(s))
	add(lower, len(lower), minEncodedRun)
	add(bytes.ToUpper(lower), len(lower), minEncodedRun)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for skip := 0; skip < 3 && skip < len(s); skip++ {
			whole := []byte(enc.EncodeToString(s[skip:]))
			// Inside a longer text only the whole groups are s's alone;
			// the characters after them depend on the text after s.
			core := whole[:len(s[skip:])/3*4]
			if skip == 0 {
				// Alone: the whole of it, padding or not.
				unpadded := len(bytes.TrimRight(whole, "="))
				add(whole, unpadded, minEncodedRun)
			}
			add(core, len(core), minEncodedRun)
		}
	}
	return forms
}

// escapeCuts returns, for each place in the content of a JSON string and
// the place after it, whether it is not inside an escape.
func escapeCuts(text []byte) []bool {
	cut := make([]bool, len(text)+1)
	for u := 0; u < len(text); u += escapeLen(text, u) {
		cut[u] = true
	}
	cut[len(text)] = true
	return cut
}

// escapeLen returns the length of the character or escape at b[u]: 6 for
// \uXXXX, 2 for another escape, 1 for anything else.
func escapeLen(b []byte, u int) int {
	if b[u] != '\\' || u+1 >= len(b) {
		return 1
	}
	if b[u+1] == 'u' && u+6 <= len(b) {
		return 6
	}
	return 2
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}
