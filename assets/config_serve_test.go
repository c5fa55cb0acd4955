package assets_test

import (
	"testing"

	"github.com/orbitrun/orbit/assets"
)

// FuzzParseConfigLimitsAndTLS: any serve.tls and engine.max_descendants
// parse or are refused with problems, never a panic; what is accepted has
// a certificate and its key, and a limit of at least one.
func FuzzParseConfigLimitsAndTLS(f *testing.F) {
	for _, seed := range []string{
		"serve:\n  tls: {cert: a.pem, key: a-key.pem, ca: ca.pem}\n",
		"serve:\n  tls: {cert: a.pem}\n",
		"serve:\n  tls: on\n",
		"serve: {tls: {cert: [x], key: 1}}\n",
		"engine: {max_descendants: 1000}\n",
		"engine: {max_descendants: 0}\n",
		"engine: {max_descendants: -3}\n",
		"engine: {max_descendants: 1e9}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		c, err := assets.ParseConfig("c.yaml", []byte(doc))
		if err != nil {
			return
		}
		if tls := c.Serve.TLS; tls != nil && (tls.Cert == "" || tls.Key == "") {
			t.Fatalf("serve.tls %+v accepted", *tls)
		}
		if c.Engine.MaxDescendants < 1 {
			t.Fatalf("engine.max_descendants %d accepted", c.Engine.MaxDescendants)
		}
	})
}
