package jsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/protocol"
)

// NodeEntry writes and removes one node's registry entry. Writing is a
// publish to the entry's subject, as a KV put is, without looking the
// bucket up first: a stream lookup is a JetStream API request, answered by
// the stream's leader through a bounded queue, and a whole fleet starting
// at once (20,000 agents) filled it until lookups timed out. Only when no
// bucket answers is it looked up, and created with the configuration (an
// agent alone with a broker).
type NodeEntry struct {
	js       jetstream.JetStream
	cfg      RegistryConfig
	identity string
	subject  string
	// created is set once the bucket was created or found by a lookup
	created bool
}

// NewNodeEntry returns the writer of identity's entry; c configures the
// bucket should the writer have to create it.
func NewNodeEntry(js jetstream.JetStream, c RegistryConfig, identity string) *NodeEntry {
	return &NodeEntry{js: js, cfg: c, identity: identity, subject: "$KV." + protocol.NodesBucket + "." + identity}
}

// Put stores data as the entry.
func (n *NodeEntry) Put(ctx context.Context, data []byte) error {
	_, err := n.js.Publish(ctx, n.subject, data)
	if noStream(err) && !n.created {
		kv, oerr := OpenRegistry(ctx, n.js, n.cfg)
		if oerr != nil {
			return oerr
		}
		n.created = true
		_, err = kv.Put(ctx, n.identity, data)
	}
	if err != nil {
		return fmt.Errorf("registry %s: %w", protocol.NodesBucket, err)
	}
	return nil
}

// Delete removes the entry (a KV delete marker).
func (n *NodeEntry) Delete(ctx context.Context) error {
	m := nats.NewMsg(n.subject)
	m.Header.Set("KV-Operation", "DEL")
	if _, err := n.js.PublishMsg(ctx, m); err != nil {
		return fmt.Errorf("registry %s: %w", protocol.NodesBucket, err)
	}
	return nil
}

// noStream tells whether err says no stream took a publish.
func noStream(err error) bool {
	return errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)
}
