package testkit

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy is a TCP proxy in front of a node of a Cluster, for a client whose
// traffic a test cuts at a chosen moment: once armed with Swallow, it
// drops everything the server sends from the first bytes that hold a
// pattern on, as a node that dies with a message on its way to the client
// loses it. It is closed when the test ends.
type Proxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu        sync.Mutex
	pattern   []byte
	swallowed chan string // the line that held the pattern, once
	conns     []net.Conn
}

// StartProxy listens on a loopback port and forwards each connection to
// target (host:port).
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &Proxy{t: t, ln: ln, target: target}
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// URL is the proxy's client URL.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

// Swallow arms the proxy: from the first bytes the server sends that hold
// pattern, nothing the server sends reaches the client. The channel yields
// the line that held it.
func (p *Proxy) Swallow(pattern string) <-chan string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pattern = []byte(pattern)
	p.swallowed = make(chan string, 1)
	return p.swallowed
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		go func() {
			_, _ = io.Copy(server, client)
			_ = server.Close()
		}()
		go func() {
			p.fromServer(client, server)
			_ = client.Close()
		}()
	}
}

// fromServer copies what the server sends to the client until the
// pattern is seen, and drops the rest.
func (p *Proxy) fromServer(client, server net.Conn) {
	buf := make([]byte, 32<<10)
	var tail []byte // the end of the last read, for a pattern split across two
	dropping := false
	for {
		n, err := server.Read(buf)
		if n > 0 && !dropping {
			p.mu.Lock()
			pattern, swallowed := p.pattern, p.swallowed
			if pattern != nil {
				seen := append(tail, buf[:n]...)
				if i := bytes.Index(seen, pattern); i >= 0 {
					line, _, _ := bytes.Cut(seen[i:], []byte("\r\n"))
					swallowed <- string(line)
					p.pattern = nil
					dropping = true
				}
				tail = append([]byte(nil), seen[max(0, len(seen)-len(pattern)):]...)
			}
			p.mu.Unlock()
			if !dropping {
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}
