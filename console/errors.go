package console

import "errors"

// Sentinel errors of the console.
var (
	// ErrAddress: the console's address is not host:port.
	ErrAddress = errors.New("console: bad address")
	// ErrInsecure: an address beyond loopback without a token of the
	// operator's choosing.
	ErrInsecure = errors.New("console: refusing to serve beyond loopback without --http-token")
	// ErrToken: the owner's token file cannot be used.
	ErrToken = errors.New("console: token file")
)
