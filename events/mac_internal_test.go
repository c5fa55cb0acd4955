package events

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The MAC made with reused HMAC states is the HMAC-SHA256 of the message's
// parts under the key, whichever message the state made before, from any
// number of goroutines at once.
func TestMACsFromReusedStatesAreTheHMAC(t *testing.T) {
	t.Parallel()
	k := testKey()
	want := func(subject, id string, body []byte) string {
		h := hmac.New(sha256.New, k.key)
		h.Write([]byte("orbit-msg\x00" + subject + "\x00" + id + "\x00"))
		h.Write(body)
		return hex.EncodeToString(h.Sum(nil))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				subject := fmt.Sprintf("orbit.events.run.R%d.step.finished", i%7)
				id := strings.Repeat("c", (g+i)%3)
				body := []byte(strings.Repeat("x", i*g))
				assert.Equal(t, want(subject, id, body), k.mac(subject, id, body))
			}
		})
	}
	wg.Wait()
}
