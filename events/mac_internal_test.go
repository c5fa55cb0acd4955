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
	want := func(format2 bool, subject, id, msgID string, body []byte) string {
		h := hmac.New(sha256.New, k.key)
		if format2 {
			h.Write([]byte("orbit-msg-2\x00" + subject + "\x00" + id + "\x00" + msgID + "\x00"))
		} else {
			h.Write([]byte("orbit-msg\x00" + subject + "\x00" + id + "\x00"))
		}
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
				format2, msgID := i%2 == 0, fmt.Sprintf("k%d", i)
				assert.Equal(t, want(format2, subject, id, msgID, body), k.mac(format2, subject, id, msgID, body))
			}
		})
	}
	wg.Wait()
}
