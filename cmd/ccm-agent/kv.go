package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/natsconn"
	"github.com/ccm-fleet/ccm/resources/templates"
	"github.com/ccm-fleet/ccm/resources/templates/natskv"
)

// ErrNoKVConnection is returned by kvGet() in a local run given no NATS
// connection to read buckets with.
var ErrNoKVConnection = errors.New("no NATS connection for kvGet: give --server URL or --context NAME (or set CCM_SERVER, NATS_URL or NATS_CONTEXT)")

// lazyKV is the key-value store of kvGet() in a local run: it connects
// with the command's NATS flags at the first kvGet() and never before, so
// a manifest that reads no bucket needs no NATS.
type lazyKV struct {
	flags *connflags.Flags
	log   *slog.Logger
	// guards nc, r and err
	mu  sync.Mutex
	nc  *nats.Conn
	js  jetstream.JetStream
	r   *natskv.Reader
	err error
}

// ErrNoConnection is returned when a kv:// or obj:// source is given but
// no NATS server or context is.
var ErrNoConnection = errors.New("no NATS connection")

// jetStream is the command's JetStream connection for what (a kv:// or
// obj:// source), made at the first call. Errors wrap ErrNoConnection when
// no server or context is given.
func (l *lazyKV) jetStream(ctx context.Context, what string) (jetstream.JetStream, error) {
	_, err := l.reader(ctx)
	if errors.Is(err, ErrNoKVConnection) {
		return nil, fmt.Errorf("%w for %s: give --server URL or --context NAME (or set CCM_SERVER, NATS_URL or NATS_CONTEXT)", ErrNoConnection, what)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return l.js, nil
}

var _ templates.KVReader = (*lazyKV)(nil)

// KVGet implements templates.KVReader; kvGet() names the function, the
// bucket and the key in front of its error.
func (l *lazyKV) KVGet(ctx context.Context, bucket, key string) ([]byte, error) {
	r, err := l.reader(ctx)
	if err != nil {
		return nil, fmt.Errorf("bucket %q: %w", bucket, err)
	}
	return r.KVGet(ctx, bucket, key)
}

func (l *lazyKV) reader(ctx context.Context) (*natskv.Reader, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.r != nil || l.err != nil {
		return l.r, l.err
	}
	opts, err := l.flags.Options("ccm-agent kvGet", l.log, natsconn.Options{})
	if err != nil {
		l.err = err
		return nil, err
	}
	if opts.Servers == "" && opts.Context == "" {
		l.err = ErrNoKVConnection
		return nil, l.err
	}
	nc, err := natsconn.Connect(ctx, opts)
	if err != nil {
		l.err = fmt.Errorf("kvGet connection: %w", l.flags.Explain(err, opts, natsconn.Options{}, ""))
		return nil, l.err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		l.err = fmt.Errorf("kvGet connection: %w", err)
		return nil, l.err
	}
	l.nc, l.js, l.r = nc, js, natskv.New(js)
	return l.r, nil
}

// Close closes the connection, when one was made.
func (l *lazyKV) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nc != nil {
		l.nc.Close()
	}
}
