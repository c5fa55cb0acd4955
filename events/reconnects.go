package events

import "sync"

// reconnects tells who waits on the log's connection through one server
// that it has been made again, to another or the same: what waited there
// (a pull request on a consumer, say) is gone with the server that held it.
type reconnects struct {
	mu sync.Mutex
	ch chan struct{}
}

// next returns a channel closed at the next reconnection.
func (r *reconnects) next() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ch == nil {
		r.ch = make(chan struct{})
	}
	return r.ch
}

// happened closes the channel of those waiting for a reconnection.
func (r *reconnects) happened() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ch != nil {
		close(r.ch)
		r.ch = nil
	}
}
