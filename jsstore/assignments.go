package jsstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
// defaults: 1 replica, the bucket's own values.
type AssignmentsConfig struct {
	// Replicas is how many servers keep the bucket (1 to 5).
	Replicas int
	// Hub, at a site broker, is the hub's JetStream domain: the site's
	// bucket is then a mirror of the hub's, so an assignment stored at
	// the hub reaches the site's agents (and keeps running there while
	// the hub is away). Empty: the bucket holds its own values.
	Hub string
}

// ErrSiteAssignments is returned by EnsureAssignments at a site whose
// bucket holds assignments of its own (made before sites mirrored the
// hub's): a bucket cannot become a mirror, and deleting it would lose them.
var ErrSiteAssignments = errors.New("the site's assignment bucket is not a mirror of the hub's")

// ErrAssignmentsMirror is returned by the writers of a bucket that mirrors
// the hub's: assignments are stored and removed at the hub.
var ErrAssignmentsMirror = errors.New("this assignment bucket mirrors the hub's")

// Validate checks the configuration; errors wrap ErrInvalid.
func (c AssignmentsConfig) Validate() error {
	if c.Replicas < 0 || c.Replicas > MaxReplicas {
		return fmt.Errorf("%w: replicas %d must be between 1 and %d", ErrInvalid, c.Replicas, MaxReplicas)
	}
	return nil
}

// KeyValueConfig is the assignment bucket's configuration: file storage,
// AssignmentHistory revisions per name, no expiry, every change
// republished to protocol.AssignmentChangeSubjects; at a site, a mirror of
// the hub's bucket (whose revisions it keeps).
func (c AssignmentsConfig) KeyValueConfig() jetstream.KeyValueConfig {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	cfg := jetstream.KeyValueConfig{
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
	if c.Hub != "" {
		cfg.Description = "CCM Fleet assignments: a mirror of the hub's (domain " + c.Hub + ")"
		cfg.Mirror = &jetstream.StreamSource{Name: protocol.AssignmentsBucket, Domain: c.Hub}
	}
	return cfg
}

// EnsureAssignments creates the assignment bucket, or updates it to c when
// it exists. A bucket that mirrors the hub's stays a mirror (`ccm-orch
// history init` at a site keeps it); at a site (c.Hub set), an empty bucket
// of its own is replaced by the mirror and one holding assignments is left
// as it is, with ErrSiteAssignments.
func EnsureAssignments(ctx context.Context, js jetstream.JetStream, c AssignmentsConfig) (jetstream.KeyValue, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	name := "KV_" + protocol.AssignmentsBucket
	if s, err := js.Stream(ctx, name); err == nil {
		info := s.CachedInfo()
		switch {
		case info.Config.Mirror != nil && c.Hub == "":
			c.Hub = mirrorDomain(info.Config.Mirror)
		case info.Config.Mirror == nil && c.Hub != "" && info.State.Msgs > 0:
			kv, err := js.KeyValue(ctx, protocol.AssignmentsBucket)
			if err != nil {
				return nil, fmt.Errorf("assignments %s: %w", protocol.AssignmentsBucket, err)
			}
			return kv, fmt.Errorf("assignments %s: %w (domain %s): it holds assignments stored at this site (stream messages: %d), which its agents keep following; to follow the hub's, move them to the hub and delete this bucket (nats kv del %s), then restart the broker: %w",
				protocol.AssignmentsBucket, ErrSiteAssignments, c.Hub, info.State.Msgs, protocol.AssignmentsBucket, ErrInvalid)
		case info.Config.Mirror == nil && c.Hub != "":
			if err := js.DeleteStream(ctx, name); err != nil {
				return nil, fmt.Errorf("assignments %s: replacing the empty bucket with the hub's mirror: %w", protocol.AssignmentsBucket, err)
			}
		}
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("assignments %s: %w", protocol.AssignmentsBucket, err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, c.KeyValueConfig())
	if err != nil {
		return nil, fmt.Errorf("assignments %s: %w", protocol.AssignmentsBucket, err)
	}
	// Operators' watchers (and agents of a bucket made before the
	// republish) hold a consumer each.
	if err := RaiseConsumerLimit(ctx, js, name); err != nil {
		return nil, fmt.Errorf("assignments %s: %w", protocol.AssignmentsBucket, err)
	}
	return kv, nil
}

// mirrorDomain is the JetStream domain a mirror reads from ("" when it is
// not given as one).
func mirrorDomain(m *jetstream.StreamSource) string {
	if m.Domain != "" {
		return m.Domain
	}
	if m.External != nil {
		if d, ok := strings.CutPrefix(m.External.APIPrefix, "$JS."); ok {
			return strings.TrimSuffix(d, ".API")
		}
	}
	return ""
}

// OpenAssignments opens the assignment bucket; a missing bucket (or no
// JetStream) is ErrNoAssignments.
func OpenAssignments(ctx context.Context, js jetstream.JetStream) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, protocol.AssignmentsBucket)
	if err != nil {
		return nil, AssignmentsError(err)
	}
	return kv, nil
}

// OpenAssignmentsToWrite is OpenAssignments for storing or removing an
// assignment: a bucket that mirrors the hub's (at a site) is
// ErrAssignmentsMirror, naming the hub's domain.
func OpenAssignmentsToWrite(ctx context.Context, js jetstream.JetStream) (jetstream.KeyValue, error) {
	s, err := js.Stream(ctx, "KV_"+protocol.AssignmentsBucket)
	if err != nil {
		return nil, AssignmentsError(err)
	}
	if m := s.CachedInfo().Config.Mirror; m != nil {
		return nil, fmt.Errorf("assignments %s: %w (domain %s): store and remove assignments with a ccm-orch connected to the hub; this site's agents follow them from there", protocol.AssignmentsBucket, ErrAssignmentsMirror, mirrorDomain(m))
	}
	return OpenAssignments(ctx, js)
}

// AssignmentsError names a missing bucket (or no JetStream answering for
// it) as ErrNoAssignments.
func AssignmentsError(err error) error {
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w %s (create it with `ccm-orch history init`): %w", ErrNoAssignments, protocol.AssignmentsBucket, err)
	}
	return fmt.Errorf("assignments %s: %w", protocol.AssignmentsBucket, err)
}
