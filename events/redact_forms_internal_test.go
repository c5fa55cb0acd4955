package events

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

// Secrets as Orbit meets them: a provider's API key and an nkey seed.
const (
	testAPIKey = "sk-ant-api03-Xq7Rz0pLm2VbN8cT4yUeW1oIa6SdF3gH5jKl9ZxCvBn7Mq2Wr4Te8Yu0Io3Pa5Sd7Fg9Hj1Kl3Zx5Cv7Bn9Mq1Wr3Te5-AbCdEfAA"
	testSeed   = "SUAIBDPBAUTWCWBKIO6XHQNINK5FWJW4OHLXC3HQ2KFE4PEJUA44CNHTC4"
)

// unbroken removes line breaks, raw and JSON-escaped, from b.
func unbroken(b []byte) []byte {
	for _, br := range []string{`\n`, `\r`, "\n", "\r"} {
		b = bytes.ReplaceAll(b, []byte(br), nil)
	}
	return b
}

// runs returns the shortest runs of f that count: need characters or
// more, beginning and ending with whole escapes.
func runs(f secretForm) [][]byte {
	ok := func(k int) bool { return f.cut == nil || f.cut[k] }
	var out [][]byte
	for i := 0; i+f.need <= len(f.text); i++ {
		if !ok(i) {
			continue
		}
		j := i + f.need
		for j < len(f.text) && !ok(j) {
			j++
		}
		out = append(out, f.text[i:j])
	}
	return out
}

// leak returns a run of one of secret's forms (secretForms) that counts
// and is left in out, line breaks removed; "" when none is.
func leak(out []byte, secret string) string {
	text := unbroken(out)
	for _, f := range secretForms([]byte(secret)) {
		for _, run := range runs(f) {
			if bytes.Contains(text, run) {
				return string(run)
			}
		}
	}
	return ""
}

// fold breaks s into lines of width characters, as fold -w does.
func fold(s string, width int, nl string) string {
	var b strings.Builder
	for len(s) > width {
		b.WriteString(s[:width] + nl)
		s = s[width:]
	}
	b.WriteString(s)
	return b.String()
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// TestRedactorFindsTheCommonEncodings prints each secret as a step would —
// base64 (standard and URL-safe, padded or not, alone, wrapped at 76 as
// base64 does, inside a longer encoded text at each alignment), hex in
// either case, folded over lines, cut to a prefix — into raw output (a
// blob) and into a JSON envelope (the log), and finds none of it left.
func TestRedactorFindsTheCommonEncodings(t *testing.T) {
	t.Parallel()
	r := &Redactor{}
	r.Add(testAPIKey)
	r.Add(testSeed)
	for _, secret := range []string{testAPIKey, testSeed} {
		std := base64.StdEncoding.EncodeToString([]byte(secret))
		cases := map[string]string{
			"raw":                 secret,
			"base64 -w0":          std,
			"base64 wrapped":      fold(std, 76, "\n"),
			"base64 unpadded":     base64.RawStdEncoding.EncodeToString([]byte(secret)),
			"base64 url":          base64.URLEncoding.EncodeToString([]byte(secret)),
			"base64 url unpadded": base64.RawURLEncoding.EncodeToString([]byte(secret)),
			"hex":                 hex.EncodeToString([]byte(secret)),
			"HEX":                 strings.ToUpper(hex.EncodeToString([]byte(secret))),
			"fold -w 8":           fold(secret, 8, "\n"),
			"fold -w 8 crlf":      fold(secret, 8, "\r\n"),
			"cut -c1-20":          secret[:20],
			"a middle of it":      secret[17:40],
		}
		for i, prefix := range []string{"", "k=", "key: ", "export KEY="} {
			env := prefix + secret + "\nHOME=/root\n"
			cases["inside base64, at offset "+string(rune('0'+i))] = base64.StdEncoding.EncodeToString([]byte(env))
			cases["inside url base64, at offset "+string(rune('0'+i))] = base64.URLEncoding.EncodeToString([]byte(env))
			cases["inside hex, at offset "+string(rune('0'+i))] = hex.EncodeToString([]byte(env))
		}
		for name, printed := range cases {
			out := r.Bytes([]byte("stdout: " + printed + "\nexit 0\n"))
			if l := leak(out, secret); l != "" {
				t.Errorf("%s of %.6s…: %q left in the blob: %s", name, secret, l, out)
			}
			env, err := json.Marshal(map[string]any{"type": "step.finished", "data": map[string]string{"stdout": printed + "\n"}})
			if err != nil {
				t.Fatal(err)
			}
			out = r.JSON(env)
			if l := leak(out, secret); l != "" {
				t.Errorf("%s of %.6s… in JSON: %q left in the log: %s", name, secret, l, out)
			}
			if !json.Valid(out) {
				t.Errorf("%s in JSON: not JSON once redacted: %s", name, out)
			}
		}
	}
}

// TestRedactorLimits pins down what redaction does not catch, as the
// docs/security.md says: the secret reversed, in an encoding it does not know, or
// less of it than partialRun characters; and leaves ordinary text alone.
func TestRedactorLimits(t *testing.T) {
	t.Parallel()
	r := &Redactor{}
	r.Add(testAPIKey)
	for name, printed := range map[string]string{
		"reversed":        reverse(testAPIKey),
		"base32":          base32.StdEncoding.EncodeToString([]byte(testAPIKey)),
		"a prefix of 15":  testAPIKey[:partialRun-1],
		"fold -w 3":       fold(testAPIKey[20:], 3, "\n"),
		"ordinary output": "built 12 packages in 3.2s; see https://example.com/docs",
	} {
		in := []byte("stdout: " + printed + "\n")
		if out := r.Bytes(in); !bytes.Equal(out, in) {
			t.Errorf("%s: changed to %s", name, out)
		}
	}
}

// A secret that JSON holds escaped (quotes, backslashes, control
// characters) is redacted from a JSON document in its escaped form and
// the document stays JSON; in raw text its raw form is.
func TestRedactorKeepsJSONValid(t *testing.T) {
	t.Parallel()
	secret := `p@ss"w\rd` + "\t" + `</script>&more`
	r := &Redactor{}
	r.Add(secret)
	doc, err := json.Marshal(map[string]any{"a": secret, "b": []string{"x" + secret + "y", fold(secret, 6, "\n")}})
	if err != nil {
		t.Fatal(err)
	}
	out := r.JSON(doc)
	if !json.Valid(out) {
		t.Fatalf("not JSON once redacted: %s", out)
	}
	if bytes.Contains(out, []byte(`w\\rd`)) || bytes.Contains(out, []byte("script")) {
		t.Errorf("the secret is left in %s", out)
	}
	if raw := r.Bytes([]byte("echo " + secret + "\n")); bytes.Contains(raw, []byte("script")) {
		t.Errorf("the raw secret is left in %s", raw)
	}
}

// FuzzRedactor: whatever the secret and the text around it, in whichever
// encoding, no run of a form of the secret as long as the form's need is
// left in the redacted text, and a JSON document stays one.
func FuzzRedactor(f *testing.F) {
	f.Add(testAPIKey, "k=", "\n", uint8(0))
	f.Add(testSeed, "", "", uint8(3))
	f.Add(`se"cr\et!!`, "x", "y", uint8(5))
	f.Add("abcdefgh", "\\", "\\n", uint8(1))
	f.Fuzz(func(t *testing.T, secret, prefix, suffix string, mode uint8) {
		if len(secret) < minSecretLen || len(secret) > 256 || len(prefix)+len(suffix) > 1024 || strings.Contains(secret, Redacted) {
			return
		}
		r := &Redactor{}
		r.Add(secret)
		plain := prefix + secret + suffix
		var text string
		switch mode % 6 {
		case 0:
			text = plain
		case 1:
			text = hex.EncodeToString([]byte(plain))
		case 2:
			text = strings.ToUpper(hex.EncodeToString([]byte(plain)))
		case 3:
			text = base64.StdEncoding.EncodeToString([]byte(plain))
		case 4:
			text = base64.RawURLEncoding.EncodeToString([]byte(plain))
		case 5:
			b, _ := json.Marshal(plain)
			text = string(b)
		}
		out := r.Bytes([]byte(text))
		for _, form := range secretForms([]byte(secret)) {
			for _, run := range runs(form) {
				if bytes.Contains(out, run) && !bytes.Contains([]byte(Redacted), run) {
					t.Fatalf("%q of a form of %q left in %q (from %q)", run, secret, out, text)
				}
			}
		}
		doc, err := json.Marshal(map[string]string{"out": text, "plain": plain})
		if err != nil {
			return
		}
		if out := r.JSON(doc); !json.Valid(out) {
			t.Fatalf("not JSON once redacted: %q (from %q)", out, doc)
		}
	})
}
