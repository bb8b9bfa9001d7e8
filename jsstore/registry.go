package jsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/protocol"
)

// MaxRegistryEntries bounds how many entries ReadRegistry returns.
const MaxRegistryEntries = 100000

// EnsureRegistry creates the registry bucket, or updates it to c when it
// exists.
func EnsureRegistry(ctx context.Context, js jetstream.JetStream, c RegistryConfig) (jetstream.KeyValue, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, c.KeyValueConfig())
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", protocol.NodesBucket, err)
	}
	return kv, nil
}

// OpenRegistry opens the registry bucket, creating it with c when it does
// not exist yet (an existing bucket is used as it is configured).
func OpenRegistry(ctx context.Context, js jetstream.JetStream, c RegistryConfig) (jetstream.KeyValue, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	kv, err := js.KeyValue(ctx, protocol.NodesBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, c.KeyValueConfig())
		if errors.Is(err, jetstream.ErrBucketExists) { // created meanwhile by someone else
			kv, err = js.KeyValue(ctx, protocol.NodesBucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", protocol.NodesBucket, err)
	}
	return kv, nil
}

// RegistryExists reports whether the registry bucket exists; an error means
// JetStream could not say (not enabled, not reachable).
func RegistryExists(ctx context.Context, js jetstream.JetStream) (bool, error) {
	_, err := js.KeyValue(ctx, protocol.NodesBucket)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrBucketNotFound):
		return false, nil
	default:
		return false, fmt.Errorf("%w: %w", ErrNoRegistry, err)
	}
}

// ReadRegistry returns every live entry of the registry (at most
// MaxRegistryEntries), in key order of the bucket's stream, and how many
// entries failed strict decoding and were skipped. A missing bucket, or
// JetStream not answering, is ErrNoRegistry.
func ReadRegistry(ctx context.Context, js jetstream.JetStream) (nodes []*protocol.NodeRecord, malformed int, err error) {
	kv, err := LookupRegistry(ctx, js)
	if err != nil {
		return nil, 0, err
	}
	return ListNodes(ctx, kv)
}

// LookupRegistry opens the existing registry bucket; a missing bucket, or
// JetStream not answering, is ErrNoRegistry.
func LookupRegistry(ctx context.Context, js jetstream.JetStream) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, protocol.NodesBucket)
	if err != nil {
		return nil, registryError(err)
	}
	return kv, nil
}

// ListNodes reads every live entry of the registry bucket kv (see
// ReadRegistry).
func ListNodes(ctx context.Context, kv jetstream.KeyValue) (nodes []*protocol.NodeRecord, malformed int, err error) {
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, 0, registryError(err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("registry %s: %w", protocol.NodesBucket, ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, 0, fmt.Errorf("registry %s: the watch ended early", protocol.NodesBucket)
			}
			if e == nil { // every current value was delivered
				return nodes, malformed, nil
			}
			rec, err := protocol.DecodeNodeRecord(e.Value(), protocol.Limits{MaxBytes: MaxNodeValueSize})
			if err != nil || rec.Identity != e.Key() {
				malformed++
				continue
			}
			if len(nodes) < MaxRegistryEntries {
				nodes = append(nodes, rec)
			}
		}
	}
}

func registryError(err error) error {
	return fmt.Errorf("%w %s: %w", ErrNoRegistry, protocol.NodesBucket, err)
}
