package main

import (
	"github.com/ccm-fleet/ccm/cmd/internal/program"

	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/choria-io/fisk"
	"github.com/nats-io/nkeys"

	"github.com/ccm-fleet/ccm/protocol"
)

// maxSeedFile bounds a seed file read with --key.
const maxSeedFile = 4096

// errKey is wrapped by every error about a key file.
var errKey = errors.New("key")

func (a *app) registerKeys(cli *fisk.Application) {
	keys := cli.Command("keys", "Make the keys requests are signed with")
	var (
		name string
		dir  string
	)
	cmd := keys.Command("new", "Make a signing key pair: NAME.seed (mode 0600, keep it secret, use it with --key) and NAME.pub (put it in the agents' policy)")
	cmd.Arg("name", "Name of the key files (letters, digits, '.', '-', '_')").Required().StringVar(&name)
	cmd.Flag("dir", "Directory to write the files in").Default(".").StringVar(&dir)
	cmd.Action(func(*fisk.ParseContext) error {
		seedPath, pubPath, pub, err := newKeyFiles(dir, name)
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		fmt.Fprintf(a.Stdout, "seed:       %s\npublic:     %s\npublic key: %s\n", seedPath, pubPath, pub)
		return nil
	})
}

// newKeyFiles makes a user key pair and writes <dir>/<name>.seed (0600)
// and <dir>/<name>.pub (0644, the public key and a newline), refusing to
// overwrite either.
func newKeyFiles(dir, name string) (seedPath, pubPath, pub string, err error) {
	if err := protocol.ValidateIdentity(name); err != nil {
		return "", "", "", fmt.Errorf("%w name %q: use letters, digits, '.', '-' and '_'", errKey, name)
	}
	seedPath = filepath.Join(dir, name+".seed")
	pubPath = filepath.Join(dir, name+".pub")
	for _, p := range []string{seedPath, pubPath} {
		if _, err := os.Lstat(p); err == nil {
			return "", "", "", fmt.Errorf("%w %s: already exists, not overwriting it", errKey, p)
		}
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", "", "", fmt.Errorf("%w: %w", errKey, err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return "", "", "", fmt.Errorf("%w: %w", errKey, err)
	}
	if pub, err = kp.PublicKey(); err != nil {
		return "", "", "", fmt.Errorf("%w: %w", errKey, err)
	}
	if err := writeNew(seedPath, append(seed, '\n'), 0o600); err != nil {
		return "", "", "", err
	}
	if err := writeNew(pubPath, []byte(pub+"\n"), 0o644); err != nil {
		_ = os.Remove(seedPath)
		return "", "", "", err
	}
	return seedPath, pubPath, pub, nil
}

// writeNew creates path with mode and data; an existing file is an error.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("%w %s: %w", errKey, path, err)
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Chmod(mode), f.Close()); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("%w %s: %w", errKey, path, err)
	}
	return nil
}

// loadSeed reads a user seed file for --key: mode at most 0600, contents
// an nkeys user seed.
func loadSeed(path string) (nkeys.KeyPair, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", errKey, path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", errKey, path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w %s: not a regular file", errKey, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSeedFile+1))
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", errKey, path, err)
	}
	if len(data) > maxSeedFile {
		return nil, fmt.Errorf("%w %s: larger than %d bytes, not a seed file", errKey, path, maxSeedFile)
	}
	if nkeys.IsValidPublicKey(string(bytes.TrimSpace(data))) {
		// Said before the mode: a public key file is rightly 0644.
		return nil, fmt.Errorf("%w %s: this is a public key, which can only verify; --key needs the seed it was made from (NAME.seed, next to NAME.pub, from ccm-orch keys new)", errKey, path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%w %s: mode %04o is wider than 0600 (chmod 600 %s)", errKey, path, perm, path)
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(data))
	if err != nil {
		return nil, fmt.Errorf("%w %s: not an nkeys seed (make one with ccm-orch keys new)", errKey, path)
	}
	if pub, err := kp.PublicKey(); err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return nil, fmt.Errorf("%w %s: not a user seed (make one with ccm-orch keys new)", errKey, path)
	}
	return kp, nil
}
