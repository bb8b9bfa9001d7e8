package broker

import (
	"context"
	"fmt"

	"github.com/nats-io/nats-server/v2/server"
)

// Reload reads the auth file (Config.AuthFile) and the TLS files again and
// applies them to the running server without a restart. Clients of users
// that were removed, or whose credentials changed, are disconnected by the
// server and cannot connect again; everyone else stays connected. When the
// auth file (or a TLS file) is invalid, Reload logs the error, keeps the
// settings in force and returns an error wrapping ErrInvalidAuth (or
// ErrInvalidConfig); when the server refuses the new settings it wraps
// ErrReload. It returns ErrNotRunning when the broker is not running.
func (b *Broker) Reload(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("broker reload: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv == nil {
		return ErrNotRunning
	}
	old := b.auth
	if err := b.loadAuthLocked(); err != nil {
		b.log.Error("broker reload refused, keeping the previous users", "auth_file", b.cfg.AuthFile, "error", err)
		return fmt.Errorf("broker reload: %w", err)
	}
	opts, err := b.optionsLocked(b.storeDir, b.clientPort, b.clusterPort, b.leafPort)
	if err == nil {
		opts.JetStream = !b.noJetStream
		err = b.srv.ReloadOptions(opts)
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrReload, err)
		}
	}
	if err != nil {
		b.auth = old
		b.log.Error("broker reload refused, keeping the previous settings", "auth_file", b.cfg.AuthFile, "error", err)
		return fmt.Errorf("broker reload: %w", err)
	}
	users := 0
	if b.auth != nil {
		users = len(b.auth.Users)
	}
	b.log.Info("broker reloaded", "auth_file", b.cfg.AuthFile, "users", users)
	return nil
}

// loadAuthLocked reads Config.AuthFile into b.auth (and makes the
// in-process user's password once); b.auth is unchanged on error.
func (b *Broker) loadAuthLocked() error {
	if b.cfg.AuthFile == "" {
		return nil
	}
	a, err := LoadAuthFile(b.cfg.AuthFile)
	if err != nil {
		return err
	}
	if b.internalPW == "" {
		pw, err := newInternalPassword()
		if err != nil {
			return err
		}
		b.internalPW = pw
	}
	b.auth = a
	return nil
}

// optionsLocked builds the server options of the current configuration
// and users.
func (b *Broker) optionsLocked(dir string, clientPort, clusterPort, leafPort int) (*server.Options, error) {
	opts, err := serverOptions(b.cfg, dir, clientPort, clusterPort, leafPort)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if b.storeLimit > 0 {
		opts.JetStreamMaxStore = b.storeLimit
	}
	if b.auth != nil {
		applyAuth(opts, b.auth, b.internalPW)
	}
	if b.cfg.IsHub() && b.anonymousPW == "" {
		pw, err := newInternalPassword()
		if err != nil {
			return nil, err
		}
		b.anonymousPW = pw
	}
	if err := applyLeafUsers(opts, b.cfg, b.anonymousPW); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	return opts, nil
}
