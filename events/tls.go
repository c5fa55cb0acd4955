package events

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// TLSFiles names the PEM files of one end of a TLS connection.
type TLSFiles struct {
	// Cert and Key are this end's certificate (chain) and private key: a
	// listener's, or a client's, shown to a listener that asks for one.
	Cert, Key string
	// CA is the other end's authority. For a listener: every client must
	// show a certificate it signed, or is refused. For a client: the
	// server's certificate is checked against it (empty: the system's
	// roots).
	CA string
}

// listenTLS makes the client listener of opts speak TLS only, with f: the
// server's own handling (nats-server's tls block), requiring and verifying
// client certificates when f.CA is set. In-process connections, the
// engine's own, stay in memory and need none.
func listenTLS(opts *server.Options, f *TLSFiles) error {
	if f.Cert == "" || f.Key == "" {
		return fmt.Errorf("%w: a listener needs a certificate and its key", ErrTLS)
	}
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: f.Cert, KeyFile: f.Key, CaFile: f.CA, Verify: f.CA != ""})
	if err != nil {
		return fmt.Errorf("%w: the listener's certificate %s, key %s, CA %q: %v", ErrTLS, f.Cert, f.Key, f.CA, err)
	}
	opts.TLSConfig, opts.TLS, opts.TLSVerify = tc, true, f.CA != ""
	opts.TLSTimeout = 5
	return nil
}

// clientTLS is the option that gives a connection f's TLS configuration.
// It does not ask for TLS itself: a tls:// URL does, or a server that
// requires it, so a client configured once reaches plain and TLS servers
// alike. (nats.RootCAs and nats.ClientCert would insist on TLS.)
func clientTLS(f *TLSFiles) (nats.Option, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, fmt.Errorf("%w: the CA: %v", ErrTLS, err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: the CA %s holds no PEM certificate", ErrTLS, f.CA)
		}
	}
	if f.Cert != "" || f.Key != "" {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("%w: the client certificate %s and key %s: %v", ErrTLS, f.Cert, f.Key, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return func(o *nats.Options) error {
		o.TLSConfig = tc
		return nil
	}, nil
}

// tlsRefused reports whether err from a connection attempt is a TLS
// handshake that failed: a server certificate this client does not trust,
// a client certificate the server refused or did not get (nats.go wraps
// both in nats.ErrTLS; an alert the server sends after the handshake is a
// "remote error"), or one end wanting TLS that the other does not speak.
func tlsRefused(err error) bool {
	var op *net.OpError
	return errors.Is(err, nats.ErrTLS) || (errors.As(err, &op) && op.Op == "remote error") ||
		errors.Is(err, nats.ErrSecureConnWanted) || errors.Is(err, nats.ErrSecureConnRequired)
}
