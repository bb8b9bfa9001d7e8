package jsstore

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// FleetMaxConsumers is the consumer limit of every stream the fleet
// provisions. nats-server 2.12 and later cap a stream that sets no limit
// at 1,000 consumers (its default_max_consumers), and every agent holds
// one watch on the assignment bucket, every CCM agent one on its bundle
// bucket: with the default the 1,001st agent could not watch. "Unlimited"
// (-1) counts as no limit there and gets the default, so the limit is set
// to a number no fleet reaches.
const FleetMaxConsumers = 1 << 20

// RaiseConsumerLimit sets the stream's consumer limit to
// FleetMaxConsumers when it is lower. Key-value and object buckets are
// made without one (their configurations have no such field), so their
// provisioning raises it on the bucket's stream afterwards.
func RaiseConsumerLimit(ctx context.Context, js jetstream.JetStream, stream string) error {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", stream, err)
	}
	cfg := s.CachedInfo().Config
	if cfg.MaxConsumers >= FleetMaxConsumers {
		return nil
	}
	cfg.MaxConsumers = FleetMaxConsumers
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("stream %s: consumer limit: %w", stream, err)
	}
	return nil
}
