package jsstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/protocol"
)

// A reader's consumer of a replicated stream answers from the stream as
// the server holding the consumer has it. nats-server places a one-replica
// consumer on any of the stream's servers, and a record is acknowledged
// once a majority stored it: the remaining replica may not hold it yet,
// and just after a leader change, or while a returning site's sourced
// records are replicated, a follower can be seconds behind. A read of one
// run that trusted such a follower would report a recorded host as "no
// reply". A consistent read first asks the stream's leader how many
// records the filter holds, then reads until the consumer delivered as
// many.

// consistentPoll is how often a consumer that delivered fewer records than
// the leader counted is asked again.
const consistentPoll = 20 * time.Millisecond

// consistentWait bounds the wait for a lagging replica: one that stays
// behind longer (cut off from its leader) fails the read with ErrLagging.
const consistentWait = 10 * time.Second

// ErrLagging says a consistent read came from a stream replica that did
// not catch up with its leader within consistentWait.
var ErrLagging = errors.New("the server answering the read lags the stream's leader")

// leaderCount returns how many records the stream's leader holds on the
// subjects filter matches.
func leaderCount(ctx context.Context, js jetstream.JetStream, filter string) (uint64, error) {
	s, err := js.Stream(ctx, protocol.HistoryStream)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n, nil
}

// awaitPending waits until the consumer has more to deliver, while it
// delivered fewer than want records; it returns the consumer's pending
// count, or ErrLagging (naming the consumer's server) when nothing came
// within consistentWait.
func awaitPending(ctx context.Context, cons jetstream.Consumer, delivered, want uint64) (uint64, error) {
	deadline := time.Now().Add(consistentWait)
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			return 0, err
		}
		if info.NumPending > 0 {
			return info.NumPending, nil
		}
		if time.Now().After(deadline) {
			server := "?"
			if info.Cluster != nil && info.Cluster.Leader != "" {
				server = info.Cluster.Leader
			}
			return 0, fmt.Errorf("%w: server %s delivered %d of the %d records its leader holds", ErrLagging, server, delivered, want)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(consistentPoll):
		}
	}
}
