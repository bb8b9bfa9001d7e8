package jsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/protocol"
)

// Assignment store bounds.
//
// Assignments are kept in a KV bucket rather than an Object Store: each is
// one small signed document under its name, agents follow every change
// through the bucket's republished copy of it (no consumer per agent), and the
// bucket's history keeps past revisions for `assignments show --revision`.
// An Object Store chunks values and keeps no revisions per name. The cost is
// that an assignment, its manifest bundle included, must fit in one message
// (the broker's max_payload, 1 MiB by default).
const (
	// AssignmentHistory is how many revisions of each assignment are kept
	// (JetStream's limit).
	AssignmentHistory = 64
	// MaxAssignmentValueSize bounds one stored assignment.
	MaxAssignmentValueSize = 8 << 20
)

// ErrNoAssignments is returned when the assignment bucket does not exist
// (run `ccm-orch history init`) or JetStream is not available.
var ErrNoAssignments = errors.New("no assignment store")

// AssignmentsConfig configures the assignment bucket. Zero fields take the
// defaults: 1 replica.
type AssignmentsConfig struct {
	// Replicas is how many servers keep the bucket (1 to 5).
	Replicas int
}

// Validate checks the configuration; errors wrap ErrInvalid.
func (c AssignmentsConfig) Validate() error {
	if c.Replicas < 0 || c.Replicas > MaxReplicas {
		return fmt.Errorf("%w: replicas %d must be between 1 and %d", ErrInvalid, c.Replicas, MaxReplicas)
	}
	return nil
}

// KeyValueConfig is the assignment bucket's configuration: file storage,
// AssignmentHistory revisions per name, no expiry, every change
// republished to protocol.AssignmentChangeSubjects.
func (c AssignmentsConfig) KeyValueConfig() jetstream.KeyValueConfig {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	return jetstream.KeyValueConfig{
		Bucket:       protocol.AssignmentsBucket,
		Description:  "CCM Fleet assignments: signed manifests agents apply on their own, on a schedule",
		History:      AssignmentHistory,
		Storage:      jetstream.FileStorage,
		Replicas:     c.Replicas,
		MaxValueSize: MaxAssignmentValueSize,
		// Every stored change goes to the agents' subscriptions as well:
		// following the bucket costs an agent no consumer.
		RePublish: &jetstream.RePublish{
			Source:      "$KV." + protocol.AssignmentsBucket + ".>",
			Destination: protocol.AssignmentChangeSubjects,
		},
	}
}

// EnsureAssignments creates the assignment bucket, or updates it to c when
// it exists.
func EnsureAssignments(ctx context.Context, js jetstream.JetStream, c AssignmentsConfig) (jetstream.KeyValue, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, c.KeyValueConfig())
	if err != nil {
		return nil, fmt.Errorf("assignments %s: %w", protocol.AssignmentsBucket, err)
	}
	// Operators' watchers (and agents of a bucket made before the
	// republish) hold a consumer each.
	if err := RaiseConsumerLimit(ctx, js, "KV_"+protocol.AssignmentsBucket); err != nil {
		return nil, fmt.Errorf("assignments %s: %w", protocol.AssignmentsBucket, err)
	}
	return kv, nil
}

// OpenAssignments opens the assignment bucket; a missing bucket (or no
// JetStream) is ErrNoAssignments.
func OpenAssignments(ctx context.Context, js jetstream.JetStream) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, protocol.AssignmentsBucket)
	if err != nil {
		return nil, assignmentsError(err)
	}
	return kv, nil
}

// assignmentsError names a missing bucket (or no JetStream answering for
// it) as ErrNoAssignments.
func assignmentsError(err error) error {
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w %s (create it with `ccm-orch history init`): %w", ErrNoAssignments, protocol.AssignmentsBucket, err)
	}
	return fmt.Errorf("assignments %s: %w", protocol.AssignmentsBucket, err)
}
