package natsconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// DefaultConnectTimeout bounds each server's dial and handshake, for the
// initial connect (shortened to ctx's deadline) and for every reconnect.
const DefaultConnectTimeout = 5 * time.Second

// Reconnect backoff: the wait after the n-th full pass over the server list
// is min(reconnectBase*2^(n-1), reconnectMax), of which the upper half is
// random so a fleet does not reconnect in lockstep.
const (
	reconnectBase = 250 * time.Millisecond
	reconnectMax  = 10 * time.Second
)

// maxSecretFileSize bounds how much of a creds or CA file is read.
const maxSecretFileSize = 1 << 20

// Connect opens a connection as opts say (after Resolve). The initial
// connect does not retry: when no server accepts it, Connect returns an
// error wrapping ErrConnect that names the servers. ctx bounds the initial
// connect: the per-server dial and handshake timeout is DefaultConnectTimeout
// or, when sooner, the time left until ctx's deadline (reconnects keep that
// timeout). Once
// connected, the connection reconnects forever with capped, jittered
// exponential backoff until the caller closes it.
func Connect(ctx context.Context, opts Options) (*nats.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConnect, err)
	}
	r, err := opts.Resolve()
	if err != nil {
		return nil, err
	}
	servers := r.redactedServers()

	timeout := DefaultConnectTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
		if timeout <= 0 {
			return nil, fmt.Errorf("%w at %s: %w", ErrConnect, servers, context.DeadlineExceeded)
		}
	}

	log := r.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("servers", servers)
	if r.Name != "" {
		log = log.With("connection", r.Name)
	}

	no, err := natsOptions(r, log, timeout)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(strings.Join(r.serverList(), ","), no...)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %w", ErrConnect, servers, err)
	}
	if err := ctx.Err(); err != nil {
		nc.Close()
		return nil, fmt.Errorf("%w at %s: %w", ErrConnect, servers, err)
	}
	log.Info("NATS connected", "url", nc.ConnectedUrlRedacted(), "server", nc.ConnectedServerName())
	return nc, nil
}

// natsOptions builds the nats.go options of resolved options r, checking
// every credential file first so its error names it.
func natsOptions(r Options, log *slog.Logger, timeout time.Duration) ([]nats.Option, error) {
	no := []nats.Option{
		nats.Timeout(timeout),
		nats.RetryOnFailedConnect(false),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(reconnectDelay),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected", "error", err)
				return
			}
			log.Info("NATS disconnected")
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("NATS reconnected", "url", nc.ConnectedUrlRedacted(), "server", nc.ConnectedServerName())
		}),
		nats.ClosedHandler(func(nc *nats.Conn) {
			if err := nc.LastError(); err != nil {
				log.Warn("NATS connection closed", "error", err)
				return
			}
			log.Info("NATS connection closed")
		}),
		nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) { asyncError(log, nc, sub, err) }),
	}
	if r.Name != "" {
		no = append(no, nats.Name(r.Name))
	}
	if r.InboxPrefix != "" {
		no = append(no, nats.CustomInboxPrefix(r.InboxPrefix))
	}

	switch {
	case r.Creds != "":
		if err := checkCreds(r.Creds); err != nil {
			return nil, err
		}
		no = append(no, nats.UserCredentials(r.Creds))
	case r.NKey != "":
		o, err := nats.NkeyOptionFromSeed(r.NKey)
		if err != nil {
			return nil, fmt.Errorf("%w: nkey %s: %w", ErrCredentials, r.NKey, err)
		}
		no = append(no, o)
	}
	if r.User != "" || r.Password != "" {
		no = append(no, nats.UserInfo(r.User, r.Password))
	}
	if r.Token != "" {
		no = append(no, nats.Token(r.Token))
	}

	if r.TLSCert != "" {
		if _, err := tls.LoadX509KeyPair(r.TLSCert, r.TLSKey); err != nil {
			return nil, fmt.Errorf("%w: tls cert %s / key %s: %w", ErrCredentials, r.TLSCert, r.TLSKey, err)
		}
		no = append(no, nats.ClientCert(r.TLSCert, r.TLSKey))
	}
	if r.TLSCA != "" {
		if err := checkCA(r.TLSCA); err != nil {
			return nil, err
		}
		no = append(no, nats.RootCAs(r.TLSCA))
	}
	return no, nil
}

// asyncError logs an error nats.go reports apart from any call.
//
// A JetStream watch (an object store's or a bucket's) is an ordered push
// consumer with idle heartbeats every 5s, which nats.go checks every 10s:
// connected, it makes a silent consumer again; disconnected, it cannot, and
// reports nats.ErrConsumerNotActive every 10s for each watch until the
// connection is back, when it makes it again. That is the disconnection,
// logged once as a warning, and so at debug level here: an idle watch on
// a link that is down does not repeat it. Reported while connected, the
// consumer is lost (it is not an ordered one, or it could not be made
// again): a warning.
func asyncError(log *slog.Logger, nc *nats.Conn, sub *nats.Subscription, err error) {
	level := slog.LevelWarn
	if errors.Is(err, nats.ErrConsumerNotActive) && nc != nil && !nc.IsConnected() {
		level = slog.LevelDebug
	}
	if sub != nil {
		log.Log(context.Background(), level, "NATS asynchronous error", "subject", sub.Subject, "error", err)
		return
	}
	log.Log(context.Background(), level, "NATS asynchronous error", "error", err)
}

// reconnectDelay is the wait before the next pass over the server list after
// attempts failed passes.
func reconnectDelay(attempts int) time.Duration {
	d := reconnectMax
	if attempts >= 1 && attempts <= 16 {
		d = min(reconnectBase<<(attempts-1), reconnectMax)
	}
	half := d / 2
	return half + rand.N(half+1)
}

// checkCreds reads a creds file and checks that it holds a user JWT and an
// nkey seed, so a bad file fails before dialing and is named.
func checkCreds(path string) error {
	data, err := readBounded(path)
	if err != nil {
		return fmt.Errorf("%w: creds %s: %w", ErrCredentials, path, err)
	}
	token, err := nkeys.ParseDecoratedJWT(data)
	if err == nil {
		_, err = jwt.DecodeUserClaims(token)
	}
	if err != nil {
		return fmt.Errorf("%w: creds %s: no valid user JWT: %w", ErrCredentials, path, err)
	}
	kp, err := nkeys.ParseDecoratedNKey(data)
	if err != nil {
		return fmt.Errorf("%w: creds %s: no nkey seed: %w", ErrCredentials, path, err)
	}
	kp.Wipe()
	return nil
}

// checkCA reads a CA file and checks that it holds at least one certificate.
func checkCA(path string) error {
	data, err := readBounded(path)
	if err != nil {
		return fmt.Errorf("%w: tls ca %s: %w", ErrCredentials, path, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		if b, _ := pem.Decode(data); b == nil {
			return fmt.Errorf("%w: tls ca %s: no PEM certificate found", ErrCredentials, path)
		}
		return fmt.Errorf("%w: tls ca %s: cannot parse certificate", ErrCredentials, path)
	}
	return nil
}

// readBounded reads a small secret or certificate file.
func readBounded(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > maxSecretFileSize {
		return nil, fmt.Errorf("larger than %d bytes", maxSecretFileSize)
	}
	return os.ReadFile(path)
}
