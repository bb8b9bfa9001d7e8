package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/nkeys"
)

// KeyFileName is the agent's seed file below its state directory.
const KeyFileName = "agent.nk"

// ErrKey is wrapped by errors loading or creating the agent's key.
var ErrKey = errors.New("agent key")

// loadOrCreateKey reads the agent's user seed from path, creating it (mode
// 0600, its directory 0700) at first start. A file with wider permissions
// or contents that are not a user seed is an error.
func loadOrCreateKey(path string) (nkeys.KeyPair, error) {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return createKey(path)
	case err != nil:
		return nil, fmt.Errorf("%w %s: %w", ErrKey, path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrKey, path, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w %s: mode %04o is wider than 0600", ErrKey, path, fi.Mode().Perm())
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(data))
	if err != nil {
		return nil, fmt.Errorf("%w %s: not an nkeys seed: %w", ErrKey, path, err)
	}
	if pub, err := kp.PublicKey(); err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return nil, fmt.Errorf("%w %s: not a user seed", ErrKey, path)
	}
	return kp, nil
}

// createKey makes a new user key and writes its seed to path, refusing to
// replace a file that appeared meanwhile.
func createKey(path string) (nkeys.KeyPair, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrKey, path, err)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKey, err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKey, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrKey, path, err)
	}
	_, werr := f.Write(append(seed, '\n'))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("%w %s: %w", ErrKey, path, werr)
	}
	return kp, nil
}
