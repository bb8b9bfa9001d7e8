package registration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// A reader accepts an entry only when its signer is the key it trusts for
// the host the entry names (Entry.Host). Trust says which key that is, in
// this order:
//
//  1. the keys the reader's policy pins for the host
//     (registration.publishers): a pinned host is trusted for those keys
//     only;
//  2. the public key the node registry (CCM_NODES) holds for the host, the
//     key `ccm-agent run` signs its replies and its registrations with;
//  3. the host's binding in the registration stream (BindHost): the key
//     that claimed the host name first, kept while the host refreshes it.

// Trust sources, as a Record's Trust names them.
const (
	TrustPolicy   = "policy"
	TrustRegistry = "node registry"
	TrustBinding  = "host binding"
)

// BindingProtocol identifies a host binding.
const BindingProtocol = "io.choria.ccm.v1.registration.host"

// hostToken is the subject token of host bindings: it cannot be a
// cluster name (those start with a letter), and a binding's subject has
// fewer tokens than an entry's, so no entry filter matches it.
const hostToken = "_host"

// ErrHostBound is wrapped when a host name is bound to another key.
var ErrHostBound = errors.New("host bound to another key")

// Binding is a host's claim to its registration key, kept in the
// registration stream at HostSubject(Host) and signed by that key.
type Binding struct {
	Protocol  string `json:"protocol"`
	Host      string `json:"host"`
	PublicKey string `json:"public_key"`
}

// HostSubject is where host's binding is kept.
func HostSubject(host string) string {
	return SubjectPrefix + "." + hostToken + "." + protocol.EncodeToken(host)
}

// BindHost claims host for signer's key in the registration stream, or
// refreshes the claim: the first key to bind a name keeps it (the publish
// expects the subject to be empty, or to hold this key's binding, an
// expiry marker or something that is no valid binding). A name bound to
// another key is an error wrapping ErrHostBound, naming both keys; an
// administrator frees it with Unbind. A binding lives as long as the
// stream keeps messages (its max age) after its last refresh.
func BindHost(ctx context.Context, js jetstream.JetStream, stream, host string, signer *protocol.KeySigner) error {
	if err := protocol.ValidateIdentity(host); err != nil {
		return fmt.Errorf("%w: host: %w", ErrInvalid, err)
	}
	body, err := json.Marshal(&Binding{Protocol: BindingProtocol, Host: host, PublicKey: signer.PublicKey()})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	subject := HostSubject(host)
	publish := func(last uint64) error {
		msg := nats.NewMsg(subject)
		msg.Data = body
		for k, v := range signer.Header(body) {
			msg.Header[k] = v
		}
		_, err := js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(last))
		return err
	}
	var last uint64
	for attempt := 0; ; attempt++ {
		err := publish(last)
		if err == nil {
			return nil
		}
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || (apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence && apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequenceConstant) || attempt == 2 {
			return fmt.Errorf("%w: bind host %s: %w", ErrStream, host, err)
		}
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return fmt.Errorf("%w %s: %w", ErrStream, stream, err)
		}
		cur, err := s.GetLastMsgForSubject(ctx, subject)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			last = 0
			continue
		case err != nil:
			return fmt.Errorf("%w %s: bind host %s: %w", ErrStream, stream, host, err)
		}
		if b, reason := decodeBinding(subject, cur.Header, cur.Data); reason == "" && b.PublicKey != signer.PublicKey() {
			return fmt.Errorf("%w: host %s is bound to key %s (since %s), not to this host's key %s: an administrator frees the name with ccm-orch registration unbind %s",
				ErrHostBound, host, b.PublicKey, cur.Time.UTC().Format(time.RFC3339), signer.PublicKey(), host)
		}
		last = cur.Sequence
	}
}

// Unbind removes host's binding (an administrator's removal, for a host
// whose key changed; it needs the stream purge permission).
func Unbind(ctx context.Context, js jetstream.JetStream, stream, host string) error {
	if err := protocol.ValidateIdentity(host); err != nil {
		return fmt.Errorf("%w: host: %w", ErrInvalid, err)
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrStream, stream, err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(HostSubject(host))); err != nil {
		return fmt.Errorf("%w %s: unbind %s: %w", ErrStream, stream, host, err)
	}
	return nil
}

// decodeBinding verifies a stored binding: signed by the key it names,
// for the host its subject names; the reason says why not.
func decodeBinding(subject string, h nats.Header, body []byte) (*Binding, string) {
	if h == nil || h.Get(headerMarkerReason) != "" {
		return nil, "removed"
	}
	signer := h.Get(protocol.HeaderSigner)
	if signer == "" || len(body) == 0 {
		return nil, "not signed"
	}
	if err := protocol.Verify(body, signer, h.Get(protocol.HeaderSignature)); err != nil {
		return nil, "the signature does not verify"
	}
	var b Binding
	if _, err := protocol.DecodeStrict(body, &b, protocol.Limits{MaxBytes: 4096}); err != nil {
		return nil, "malformed: " + err.Error()
	}
	if b.Protocol != BindingProtocol || b.PublicKey != signer || HostSubject(b.Host) != subject {
		return nil, "not this host's binding"
	}
	return &b, ""
}

// trustCacheFor is how long a reader keeps what it learnt of a host's
// key, and registryRetry how long it leaves the node registry alone after
// it could not be read.
const (
	trustCacheFor  = 10 * time.Second
	registryRetry  = 10 * time.Minute
	lookupTimeout  = 3 * time.Second
	registryOpen   = time.Second
	maxTrustCached = 10000
)

// Trust decides whose entries a reader accepts (see the order above). Its
// zero value trusts no one; it is safe for concurrent use, and keeps what
// it looked up for a few seconds.
type Trust struct {
	// JS reads the node registry and the host bindings.
	JS jetstream.JetStream
	// Stream holds the host bindings; "" reads none.
	Stream string
	// Registry consults the node registry.
	Registry bool
	// Pinned are the keys the policy lists for each host.
	Pinned map[string][]string
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu        sync.Mutex
	cache     map[string]trusted
	kv        jetstream.KeyValue
	kvFailed  time.Time
	kvDenied  bool
	bindings  jetstream.Stream
	bindError time.Time
}

type trusted struct {
	key, source string
	at          time.Time
}

func (t *Trust) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// Check says whether signer may publish entries naming host: the source
// of that trust, or the reason it is refused.
func (t *Trust) Check(ctx context.Context, host, signer string) (source, reason string) {
	if host == "" {
		return "", "names no host: a reader cannot tell whose key should have signed it"
	}
	if keys, ok := t.Pinned[host]; ok {
		if slices.Contains(keys, signer) {
			return TrustPolicy, ""
		}
		return "", fmt.Sprintf("claims host %s but is signed by %s, not by a key the policy's registration.publishers lists for it", host, signer)
	}
	k := t.lookup(ctx, host)
	switch {
	case k.key == "":
		return "", fmt.Sprintf("claims host %s, whose key is unknown (not pinned by the policy, not in the node registry, no host binding): signed by %s", host, signer)
	case k.key != signer:
		return "", fmt.Sprintf("claims host %s but is signed by %s, not by the key %s the %s holds for it", host, signer, k.key, k.source)
	}
	return k.source, ""
}

// lookup is host's key from the registry, else its binding (cached).
func (t *Trust) lookup(ctx context.Context, host string) trusted {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if k, ok := t.cache[host]; ok && now.Sub(k.at) < trustCacheFor {
		return k
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	k := trusted{at: now}
	if key := t.registryKey(ctx, host, now); key != "" {
		k.key, k.source = key, TrustRegistry
	} else if key := t.bindingKey(ctx, host, now); key != "" {
		k.key, k.source = key, TrustBinding
	}
	if t.cache == nil || len(t.cache) >= maxTrustCached {
		t.cache = map[string]trusted{}
	}
	t.cache[host] = k
	return k
}

// registryKey is the public key of host's node registry entry, "" when
// there is none or the registry cannot be read.
func (t *Trust) registryKey(ctx context.Context, host string, now time.Time) string {
	if !t.Registry || t.JS == nil || t.kvDenied || protocol.ValidateIdentity(host) != nil {
		return ""
	}
	if t.kv == nil {
		if now.Sub(t.kvFailed) < registryRetry {
			return ""
		}
		octx, cancel := context.WithTimeout(ctx, registryOpen)
		kv, err := t.JS.KeyValue(octx, protocol.NodesBucket)
		cancel()
		if err != nil {
			// A user the broker does not let read the registry (the CCM
			// agents of dist/broker-auth-ccm-agent.yaml) gets no answer,
			// only a permissions violation: it stops asking.
			if nc := t.JS.Conn(); nc != nil && nc.LastError() != nil {
				if e := nc.LastError().Error(); strings.Contains(e, "Permissions Violation") && strings.Contains(e, "KV_"+protocol.NodesBucket) {
					t.kvDenied = true
				}
			}
			t.kvFailed = now
			return ""
		}
		t.kv = kv
	}
	e, err := t.kv.Get(ctx, host)
	if err != nil {
		return ""
	}
	rec, err := protocol.DecodeNodeRecord(e.Value(), protocol.Limits{MaxBytes: jsstore.MaxNodeValueSize})
	if err != nil || rec.Identity != host {
		return ""
	}
	return rec.PublicKey
}

// bindingKey is the key of host's binding, "" when there is none.
func (t *Trust) bindingKey(ctx context.Context, host string, now time.Time) string {
	if t.Stream == "" || t.JS == nil {
		return ""
	}
	if t.bindings == nil {
		if now.Sub(t.bindError) < trustCacheFor {
			return ""
		}
		s, err := t.JS.Stream(ctx, t.Stream)
		if err != nil {
			t.bindError = now
			return ""
		}
		t.bindings = s
	}
	subject := HostSubject(host)
	msg, err := t.bindings.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		return ""
	}
	b, reason := decodeBinding(subject, msg.Header, msg.Data)
	if reason != "" {
		return ""
	}
	return b.PublicKey
}
