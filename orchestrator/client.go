package orchestrator

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/ccm-fleet/ccm/protocol"
)

// SmallSet is the largest expected set a request is sent to one node
// subject per host (ccm.v1.req.node.<identity>) rather than on a fact or the
// all subject.
const SmallSet = 10

// Client discovers hosts and runs requests over one NATS connection. It is
// safe for concurrent use; each call uses its own reply subscription.
type Client struct {
	nc           *nats.Conn
	js           jetstream.JetStream
	log          *slog.Logger
	now          func() time.Time
	subjectFacts []string
	sender       string
	// key signs every fleet request; nil sends them unsigned
	key       *protocol.KeySigner
	keyErr    error
	publicKey string
	// hostKeys checks the signatures of replies and history records
	// with each host's expanded public key cached
	hostKeys *protocol.Verifier
}

// hostKeyCache bounds the expanded host keys a client keeps (about 1.5 KiB
// each, 48 MiB at most): large enough for the largest fleet measured
// (20,000 hosts), whose keys are used once in discovery and again in the
// run; a smaller cache would evict each key before its next use.
const hostKeyCache = 1 << 15

// Option configures a Client.
type Option func(*Client)

// WithLogger sets the logger for malformed, late and duplicate replies; the
// default discards.
func WithLogger(l *slog.Logger) Option {
	return func(c *Client) {
		if l != nil {
			c.log = l
		}
	}
}

// WithClock replaces time.Now for the times the client writes (a request's
// created time). Deadlines always run on the real clock.
func WithClock(now func() time.Time) Option {
	return func(c *Client) {
		if now != nil {
			c.now = now
		}
	}
}

// WithSubjectFacts names the facts agents subscribe fact subjects for, when
// the fleet's agents are configured differently from
// protocol.DefaultSubjectFacts. An empty list disables fact subjects.
func WithSubjectFacts(keys ...string) Option {
	return func(c *Client) { c.subjectFacts = slices.Clone(keys) }
}

// New returns a client using nc, which the caller keeps owning and closes.
func New(nc *nats.Conn, opts ...Option) *Client {
	var js jetstream.JetStream
	if nc != nil {
		js, _ = jetstream.New(nc) // fails only for invalid options, none given
	}
	c := &Client{
		nc:           nc,
		js:           js,
		log:          slog.New(slog.DiscardHandler),
		now:          time.Now,
		subjectFacts: protocol.DefaultSubjectFacts(),
		hostKeys:     protocol.NewVerifier(hostKeyCache),
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// idAlphabet is what request ids are made of.
const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// newRequestID returns 20 random characters of [a-z0-9] (about 103 bits).
func newRequestID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b[:])
}

// exactHosts returns the filter's --host terms when every one is an exact
// identity (no /regex/); ok is false otherwise or when there are none.
func exactHosts(f *protocol.Filter) (hosts []string, ok bool) {
	if f == nil || len(f.Hosts) == 0 {
		return nil, false
	}
	for _, h := range f.Hosts {
		if len(h) >= 2 && h[0] == '/' && h[len(h)-1] == '/' {
			return nil, false
		}
	}
	return uniqueSorted(f.Hosts), true
}

// subjectEquality returns the first k=v term of the filter whose key is a
// subject fact, the candidate for a fact subject.
func (c *Client) subjectEquality(f *protocol.Filter) (protocol.FilterTerm, bool) {
	for _, t := range f.Equalities() {
		if slices.Contains(c.subjectFacts, t.Key) {
			return t, true
		}
	}
	return protocol.FilterTerm{}, false
}

// discoverySubjects picks the narrowest discovery subjects for f: one node
// subject per host when the filter names at most SmallSet exact identities,
// else a fact subject when it has an equality on a subject fact, else
// ccm.v1.disc.all.
func (c *Client) discoverySubjects(f *protocol.Filter) []string {
	if hosts, ok := exactHosts(f); ok && len(hosts) <= SmallSet {
		out := make([]string, len(hosts))
		for i, h := range hosts {
			out[i] = protocol.DiscoveryNodeSubject(h)
		}
		return out
	}
	if t, ok := c.subjectEquality(f); ok {
		return []string{protocol.DiscoveryFactSubject(t.Key, t.Value)}
	}
	return []string{protocol.DiscoverySubjectAll}
}

// requestSubjects picks the narrowest request subjects for a whole (not
// batched) run: one node subject per expected host when there are at most
// SmallSet (the request then lists them as targets), else a fact subject
// when the filter has an equality on a subject fact, else ccm.v1.req.all.
func (c *Client) requestSubjects(f *protocol.Filter, expected []string) (subjects []string, perNode bool) {
	if len(expected) <= SmallSet {
		out := make([]string, len(expected))
		for i, h := range expected {
			out[i] = protocol.RequestNodeSubject(h)
		}
		return out, true
	}
	if t, ok := c.subjectEquality(f); ok {
		return []string{protocol.RequestFactSubject(t.Key, t.Value)}, false
	}
	return []string{protocol.RequestSubjectAll}, false
}

// uniqueSorted returns the distinct strings of in, sorted.
func uniqueSorted(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

// WithSender names who sends the requests, in history, when a Request does
// not (user@host, say).
func WithSender(s string) Option { return func(c *Client) { c.sender = s } }

// WithKey signs every fleet request (and the request's history record)
// with kp, an nkeys user key pair; agents run only requests signed by a
// key their policy trusts. Without it requests go unsigned.
func WithKey(kp nkeys.KeyPair) Option {
	return func(c *Client) {
		c.key, c.keyErr, c.publicKey = nil, nil, ""
		if kp == nil {
			return
		}
		c.key, c.keyErr = protocol.NewKeySigner(kp)
		if c.key != nil {
			c.publicKey = c.key.PublicKey()
		}
	}
}

// signed returns the signature headers of body, nil when the client has
// no key.
func (c *Client) signed(body []byte) (nats.Header, error) {
	switch {
	case c.keyErr != nil:
		return nil, fmt.Errorf("%w: %w", ErrInvalid, c.keyErr)
	case c.key == nil:
		return nil, nil
	}
	return nats.Header(c.key.Header(body)), nil
}
