package registration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// Stream defaults, as CCM names them.
const (
	// DefaultStream is the registration stream's name.
	DefaultStream = "REGISTRATION"
	// SubjectPrefix starts every entry's subject.
	SubjectPrefix = "choria.ccm.registration.v1"
	// DefaultMaxAge is how long an entry (and the marker of an expired
	// one) is kept at most.
	DefaultMaxAge = 5 * time.Minute
	// MaxEntries bounds the entries one query returns.
	MaxEntries = 100000
)

// headerMarkerReason is set by the server on the marker it leaves when a
// message's TTL expires.
const headerMarkerReason = "Nats-Marker-Reason"

// StreamConfig is the registration stream: one message per entry subject,
// per-message TTLs allowed, markers for expired entries kept maxAge.
func StreamConfig(name string, replicas int, maxAge time.Duration) jetstream.StreamConfig {
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	return jetstream.StreamConfig{
		Name:                   name,
		Subjects:               []string{SubjectPrefix + ".>"},
		Retention:              jetstream.LimitsPolicy,
		MaxMsgsPerSubject:      1,
		AllowMsgTTL:            true,
		AllowRollup:            true,
		Replicas:               max(replicas, 1),
		MaxAge:                 maxAge,
		SubjectDeleteMarkerTTL: maxAge,
		DenyDelete:             true,
		MaxMsgSize:             MaxEntryBytes,
		// Every reader's query is a consumer (see jsstore.FleetMaxConsumers).
		MaxConsumers: jsstore.FleetMaxConsumers,
	}
}

// EnsureStream creates or updates the registration stream.
func EnsureStream(ctx context.Context, js jetstream.JetStream, name string, replicas int, maxAge time.Duration) (jetstream.Stream, error) {
	s, err := js.CreateOrUpdateStream(ctx, StreamConfig(name, replicas, maxAge))
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrStream, name, err)
	}
	return s, nil
}

// headerOp marks a withdrawal: the entry's publisher replaced its entry
// with a signed tombstone (a host may only publish on its own subjects,
// never purge).
const (
	headerOp    = "Ccm-Registration-Op"
	opWithdrawn = "withdrawn"
	// tombstoneTTL is how long a withdrawal is kept before the server
	// removes it.
	tombstoneTTL = "60s"
)

// Publish validates e and stores it at e.PublisherSubject(signer's key),
// signed with signer, with its TTL as the message's Nats-TTL.
func Publish(ctx context.Context, js jetstream.JetStream, e *Entry, signer *protocol.KeySigner) error {
	msg, err := NewMsg(e, signer)
	if err != nil {
		return err
	}
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("%w: publish %s: %w", ErrStream, msg.Subject, err)
	}
	return nil
}

// NewMsg validates e and makes the signed message publishing it, at
// e.PublisherSubject(signer's key) with its TTL as Nats-TTL (for the
// stream, or for core NATS).
func NewMsg(e *Entry, signer *protocol.KeySigner) (*nats.Msg, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	body, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(body) > MaxEntryBytes {
		return nil, fmt.Errorf("%w: the entry is %d bytes encoded, the limit is %d: fewer or shorter annotations", ErrInvalid, len(body), MaxEntryBytes)
	}
	msg := nats.NewMsg(e.PublisherSubject(signer.PublicKey()))
	msg.Data = body
	for k, v := range signer.Header(body) {
		msg.Header[k] = v
	}
	if ttl := e.natsTTL(); ttl != "" {
		msg.Header.Set(jetstream.MsgTTLHeader, ttl)
	}
	return msg, nil
}

// Withdraw removes the entry signer published for e's endpoint by
// replacing it with a signed tombstone on the same subject (the stream
// keeps one message per subject), which expires a minute later. It needs
// only the permission to publish on the signer's own subjects.
func Withdraw(ctx context.Context, js jetstream.JetStream, e *Entry, signer *protocol.KeySigner) error {
	msg, err := NewMsg(e, signer)
	if err != nil {
		return err
	}
	msg.Header.Set(headerOp, opWithdrawn)
	msg.Header.Set(jetstream.MsgTTLHeader, tombstoneTTL)
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("%w: withdraw %s: %w", ErrStream, msg.Subject, err)
	}
	return nil
}

// Remove purges every entry of e's endpoint, whoever published it (an
// administrator's removal; it needs the stream purge permission).
func Remove(ctx context.Context, js jetstream.JetStream, stream string, e *Entry) error {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrStream, stream, err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(e.Subject())); err != nil {
		return fmt.Errorf("%w %s: remove %s: %w", ErrStream, stream, e.Subject(), err)
	}
	return nil
}

// Record is an entry as kept, with who published it.
type Record struct {
	Entry
	// Signer is the publisher's public key: its signature verified, it
	// is the key the entry's subject names, and it is the key the reader
	// trusts for the entry's Host.
	Signer string `json:"signer"`
	// Trust says why Signer is trusted for Host: TrustPolicy,
	// TrustRegistry or TrustBinding.
	Trust string `json:"trust"`
	// Published is when the entry was last published.
	Published time.Time `json:"published"`
}

// Skipped is an entry a reader dropped, and why.
type Skipped struct {
	Subject string `json:"subject"`
	Reason  string `json:"reason"`
}

// ErrNoTrust is returned by a reader given no Trust.
var ErrNoTrust = errors.New("registration: a reader needs a Trust naming the keys it accepts")

// Query returns the entries matching the filter whose signatures verify,
// were made by the key their subject names and by the key trust holds
// for the host they name, and that validate, sorted by cluster,
// protocol, service, address and port; and the entries it dropped, each
// with the reason (unsigned, a bad signature, signed by another key than
// the one the subject names or than the host's, malformed, invalid).
// Withdrawn entries and expiry markers are neither.
func Query(ctx context.Context, js jetstream.JetStream, stream string, trust *Trust, cluster, protocolName, service, address string) (recs []Record, skipped []Skipped, err error) {
	if trust == nil {
		return nil, nil, ErrNoTrust
	}
	if err := ValidFilter(cluster, protocolName, service, address); err != nil {
		return nil, nil, err
	}
	// The subjects that hold a message now, then the last message of
	// each: every entry present for the whole read is returned exactly
	// once. (A consumer delivering the last message per subject is no
	// snapshot: while agents publish their entries again, which they do
	// at every run, it delivers a subject again, and its pending count,
	// which said when to stop, drops as the messages it counted are
	// replaced, ending the read with entries missing.)
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, nil, fmt.Errorf("%w %s: %w", ErrStream, stream, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(FilterSubject(cluster, protocolName, service, address)))
	if err != nil {
		return nil, nil, fmt.Errorf("%w %s: %w", ErrStream, stream, err)
	}
	if len(info.State.Subjects) > MaxEntries {
		return nil, nil, fmt.Errorf("%w %s: %d entries match, the limit is %d: narrow the filter", ErrStream, stream, len(info.State.Subjects), MaxEntries)
	}
	subjects := make([]string, 0, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		subjects = append(subjects, subj)
	}
	sort.Strings(subjects)
	for _, subj := range subjects {
		msg, err := s.GetLastMsgForSubject(ctx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w %s: %s: %w", ErrStream, stream, subj, err)
		}
		r, reason := decode(msg.Subject, msg.Header, msg.Data)
		if reason == "" {
			r.Trust, reason = trust.Check(ctx, r.Host, r.Signer)
		}
		switch {
		case reason == reasonRemoved:
		case reason != "":
			skipped = append(skipped, Skipped{Subject: subj, Reason: reason})
		default:
			r.Published = msg.Time
			recs = append(recs, r)
		}
	}
	sort.Slice(recs, func(i, j int) bool {
		a, b := recs[i], recs[j]
		for _, p := range [][2]string{{a.Cluster, b.Cluster}, {a.Protocol, b.Protocol}, {a.Service, b.Service}, {a.Address, b.Address}} {
			if p[0] != p[1] {
				return p[0] < p[1]
			}
		}
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		return a.Signer < b.Signer
	})
	return recs, skipped, nil
}

// reasonRemoved is decode's reason for a withdrawal or an expiry marker.
const reasonRemoved = "removed"

// decode verifies and decodes one stored entry: signed, by the key its
// subject names, strictly decoded and valid. A withdrawal or an expiry
// marker gives reasonRemoved; any other reason says why the entry is not
// trusted.
func decode(subject string, h nats.Header, body []byte) (Record, string) {
	if h != nil && h.Get(headerMarkerReason) != "" {
		return Record{}, reasonRemoved
	}
	if len(body) == 0 || h == nil || h.Get(protocol.HeaderSigner) == "" {
		return Record{}, "not signed"
	}
	if len(body) > MaxEntryBytes {
		return Record{}, fmt.Sprintf("larger than %d bytes", MaxEntryBytes)
	}
	signer := h.Get(protocol.HeaderSigner)
	if err := protocol.Verify(body, signer, h.Get(protocol.HeaderSignature)); err != nil {
		return Record{}, "the signature does not verify"
	}
	if owner := publisherOf(subject); owner != signer {
		return Record{}, fmt.Sprintf("signed by %s, not by the host key %.60s its subject names", signer, owner)
	}
	if h.Get(headerOp) == opWithdrawn {
		return Record{}, reasonRemoved
	}
	var r Record
	if _, err := protocol.DecodeStrict(body, &r.Entry, protocol.Limits{MaxBytes: MaxEntryBytes}); err != nil {
		return Record{}, "malformed: " + err.Error()
	}
	if err := r.Validate(); err != nil {
		return Record{}, err.Error()
	}
	if r.PublisherSubject(signer) != subject {
		return Record{}, "kept at another endpoint's subject"
	}
	r.Signer = signer
	return r, ""
}

// Event is one change a watch saw: an entry published, or removed (by TTL
// expiry, deletion or purge) with the reason.
type Event struct {
	Subject string  `json:"subject"`
	Record  *Record `json:"entry,omitempty"`
	// Removed is the reason an entry went away, "" for a publication.
	Removed string `json:"removed,omitempty"`
	// Skipped, when set, is why a publication was dropped (see Query);
	// Record is nil then.
	Skipped string `json:"skipped,omitempty"`
}

// Watch calls fn with every change to entries matching the filter from
// now on, until ctx ends or fn returns an error. A publication is given
// as a Record only when Query would return it (see trust).
func Watch(ctx context.Context, js jetstream.JetStream, stream string, trust *Trust, cluster, protocolName, service, address string, fn func(Event) error) error {
	if trust == nil {
		return ErrNoTrust
	}
	if err := ValidFilter(cluster, protocolName, service, address); err != nil {
		return err
	}
	filter := FilterSubject(cluster, protocolName, service, address)
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrStream, stream, err)
	}
	for {
		msg, err := cons.Next(jetstream.FetchMaxWait(time.Second))
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%w %s: %w", ErrStream, stream, err)
		}
		ev := Event{Subject: msg.Subject()}
		r, reason := decode(msg.Subject(), msg.Headers(), msg.Data())
		if reason == "" {
			r.Trust, reason = trust.Check(ctx, r.Host, r.Signer)
		}
		switch {
		case reason == reasonRemoved:
			ev.Removed = msg.Headers().Get(headerMarkerReason)
			if ev.Removed == "" {
				ev.Removed = opWithdrawn
			}
		case reason != "":
			ev.Skipped = reason
		default:
			if meta, err := msg.Metadata(); err == nil {
				r.Published = meta.Timestamp
			}
			ev.Record = &r
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
}
