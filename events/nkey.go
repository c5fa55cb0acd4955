package events

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/nats-io/nkeys"
)

// readSeed parses the nkey seed in path (a bare seed, as `nk -gen user`
// writes, or a decorated one). The caller wipes the key pair.
func readSeed(path string) (nkeys.KeyPair, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("events: nkey seed: %w", err)
	}
	kp, err := nkeys.ParseDecoratedNKey(data)
	if err != nil {
		return nil, fmt.Errorf("events: nkey seed %s: %w", path, err)
	}
	return kp, nil
}

// SeedPublic returns the public key of the user nkey whose seed is in
// path: which identity a seed file signs in as.
func SeedPublic(path string) (string, error) { return nkeyPublic(path) }

// nkeyPublic returns the public key of the user nkey whose seed is in path.
func nkeyPublic(path string) (string, error) {
	kp, err := readSeed(path)
	if err != nil {
		return "", err
	}
	defer kp.Wipe()
	public, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("events: nkey seed %s: %w", path, err)
	}
	if !nkeys.IsValidPublicUserKey(public) {
		return "", fmt.Errorf("events: nkey seed %s: not a user seed (it starts with SU)", path)
	}
	return public, nil
}

// NewNKeySeed writes a fresh user nkey seed to path, readable by its owner
// only, and returns the key's public half. It refuses to overwrite a file.
func NewNKeySeed(path string) (string, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", err
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return "", err
	}
	public, err := kp.PublicKey()
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("%s exists; a seed is never overwritten", path)
	}
	if err != nil {
		return "", err
	}
	if _, err := f.Write(append(seed, '\n')); err != nil {
		f.Close()
		return "", err
	}
	return public, f.Close()
}
