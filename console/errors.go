package console

import "errors"

// Sentinel errors of the console.
var (
	// ErrAddress: the console's address is not host:port.
	ErrAddress = errors.New("console: bad address")
	// ErrInsecure: an address beyond loopback on an engine that admits
	// any client.
	ErrInsecure = errors.New("console: refusing to serve beyond loopback without a token")
)
