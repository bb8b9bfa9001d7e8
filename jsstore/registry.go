package jsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/protocol"
)

// MaxRegistryEntries bounds how many entries ReadRegistry returns.
const MaxRegistryEntries = 100000

// EnsureRegistry creates the registry bucket, or updates it to c when it
// exists. With no c.Sources an existing bucket keeps the sources it has.
func EnsureRegistry(ctx context.Context, js jetstream.JetStream, c RegistryConfig) (jetstream.KeyValue, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	cfg := c.KeyValueConfig()
	if len(c.Sources) == 0 {
		// A hub's sources are kept by a provisioning that names none.
		if s, err := js.Stream(ctx, "KV_"+protocol.NodesBucket); err == nil {
			cfg.Sources = s.CachedInfo().Config.Sources
		}
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", protocol.NodesBucket, err)
	}
	if err := RaiseConsumerLimit(ctx, js, "KV_"+protocol.NodesBucket); err != nil {
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
		// An agent that creates the bucket leaves its consumer limit to
		// provisioning (history init, ccm-broker): a stream update while
		// the whole fleet is registering is not worth it for a bucket
		// only orchestrators read with consumers.
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
	return ListNodes(ctx, js, kv)
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
//
// It reads the bucket with a watch, in bulk, and does not trust the
// watch's "every current value delivered" marker alone: under concurrent
// writes (thousands of agents refreshing their entries) that marker can
// come before the last current values (the per-message pending count the
// client goes by can reach zero and grow again), and a host would be left
// out of discovery. So it first takes the bucket's keys from the stream's
// subjects, and reads any of them the watch did not deliver one by one.
// A key written after the listing began may be missed; one that existed
// before it is not.
func ListNodes(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue) (nodes []*protocol.NodeRecord, malformed int, err error) {
	keys, err := registryKeys(ctx, js)
	if err != nil {
		return nil, 0, registryError(err)
	}
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, 0, registryError(err)
	}
	defer func() { _ = w.Stop() }()
	// latest is each key's newest value decoded (nil: malformed), in
	// order of first delivery: a key rewritten during the watch comes
	// again, and its newer value replaces the older one.
	latest := make(map[string]*protocol.NodeRecord, len(keys))
	var order []string
	take := func(key string, value []byte) {
		rec, err := protocol.DecodeNodeRecord(value, protocol.Limits{MaxBytes: MaxNodeValueSize})
		if err != nil || rec.Identity != key {
			rec = nil
		}
		if _, seen := latest[key]; !seen {
			order = append(order, key)
		}
		latest[key] = rec
	}
	for done := false; !done; {
		select {
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("registry %s: %w", protocol.NodesBucket, ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, 0, fmt.Errorf("registry %s: the watch ended early", protocol.NodesBucket)
			}
			if e == nil { // every current value was delivered, it says
				done = true
				continue
			}
			take(e.Key(), e.Value())
		}
	}
	for _, key := range keys {
		if _, seen := latest[key]; seen {
			continue
		}
		e, err := kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
			// deleted since (or a delete marker all along)
		case err != nil:
			return nil, 0, fmt.Errorf("registry %s: %s: %w", protocol.NodesBucket, key, err)
		default:
			take(key, e.Value())
		}
	}
	for _, key := range order {
		switch rec := latest[key]; {
		case rec == nil:
			malformed++
		case len(nodes) < MaxRegistryEntries:
			nodes = append(nodes, rec)
		}
	}
	return nodes, malformed, nil
}

// registryKeys lists the keys the registry's stream holds a message for,
// delete markers included.
func registryKeys(ctx context.Context, js jetstream.JetStream) ([]string, error) {
	st, err := js.Stream(ctx, "KV_"+protocol.NodesBucket)
	if err != nil {
		return nil, err
	}
	prefix := "$KV." + protocol.NodesBucket + "."
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(info.State.Subjects))
	for subject := range info.State.Subjects {
		keys = append(keys, strings.TrimPrefix(subject, prefix))
	}
	slices.Sort(keys)
	return keys, nil
}

func registryError(err error) error {
	return fmt.Errorf("%w %s: %w", ErrNoRegistry, protocol.NodesBucket, err)
}
