package orchestrator

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/catalog"
)

// Run defaults.
const (
	// DefaultTTL is how long after it was created agents may still start a
	// request.
	DefaultTTL = time.Minute
	// DefaultTimeout is how long a host has to reply once it was asked.
	DefaultTimeout = 10 * time.Second
)

// Request is one resource to apply on the hosts a filter selects.
type Request struct {
	// Filter selects hosts (--where and --host); nil selects every host.
	// When it holds only exact --host identities and no --where terms, those
	// identities are the expected set and no discovery round is made.
	Filter *protocol.Filter
	// Hosts, when not empty, are the expected set as exact identities: no
	// discovery round is made. The filter still travels with the request,
	// so a listed host it does not select ends as no reply.
	Hosts []string
	// Narrow, when set, keeps part of the hosts the filter selects (or of
	// Hosts): only listed identities, then a seeded sample. Without --where
	// terms or a select expression its Only list is the expected set, as
	// exact --host identities are, narrowed by the filter's --host terms.
	// A narrowed set is sent as targets: the hosts left out never act.
	Narrow *Narrowing
	// Noop asks for a dry run.
	Noop bool
	// TTL is how long after creation an agent may still start the request;
	// default DefaultTTL, at most protocol.MaxFleetTTL.
	TTL time.Duration
	// Timeout is how long each host has to reply once it was asked (for a
	// whole run: the collection deadline); default DefaultTimeout, or the
	// longest catalog.ReplyTimeout of the types the resource or the
	// manifest declares (a package: 5m).
	Timeout time.Duration
	// DiscoveryTimeout bounds the discovery round; default
	// DefaultDiscoveryTimeout.
	DiscoveryTimeout time.Duration
	// DiscoveryQuiet ends a broadcast discovery round once no host
	// answered for this long (see DiscoverOptions.Quiet); default
	// DefaultDiscoveryQuiet. As long as DiscoveryTimeout, the round lasts
	// its whole timeout.
	DiscoveryQuiet time.Duration
	// Discovery chooses how the expected set is found when it is not given
	// as exact identities; default DiscoveryAuto.
	Discovery DiscoveryMode
	// Async sends the request without waiting for replies: Run returns
	// once it is recorded in history and sent, and the replies land in
	// history only. It needs the history stream and cannot be batched.
	Async bool
	// Sender names who sends the request in history (user@host, say).
	Sender string
	// ManifestName names the manifest (its file) in history.
	ManifestName string
	// Ensure is the resource to apply. Set Ensure or Manifest.
	Ensure *protocol.EnsureRequest
	// Manifest is a manifest to apply (with Noop: to audit) as a bundle:
	// the document and the files its relative sources reference.
	Manifest *manifest.Bundle
	// MaxRequestBytes bounds the encoded request, so a bundle too large
	// for the agents is refused before anything is sent; default
	// protocol.DefaultMaxBytes, the agents' default max_request_bytes.
	MaxRequestBytes int
	// Batch, when positive, asks at most this many hosts at a time: a
	// sliding window where the next host is asked as soon as one finishes
	// (replies or passes its deadline). 0 asks every host at once.
	Batch int
	// BatchPercent is Batch as a percentage (1-100) of the expected set,
	// rounded up and at least one host. Set Batch or BatchPercent, not both.
	BatchPercent int
	// BatchSleep, when batching, is the pause between a host finishing and
	// the next host being asked in its place.
	BatchSleep time.Duration
	// MaxFailures, when positive and batching, stops asking new hosts once
	// this many asked hosts failed or did not reply in time; the hosts never
	// asked are reported in Result.NotAsked. 0 or negative: no limit.
	MaxFailures int
	// Progress, when set, is called as replies arrive with the number of
	// expected hosts that replied so far and the size of the expected set,
	// on the goroutine that called Run.
	Progress func(replied, expected int)
	// OnReply, when set, is called with each expected host's result as its
	// reply arrives, on the goroutine that called Run.
	OnReply func(HostResult)
}

// batching reports whether the run uses a sliding window.
func (r *Request) batching() bool { return r.Batch > 0 || r.BatchPercent > 0 }

// window is the sliding window size for n expected hosts.
func (r *Request) window(n int) int {
	switch {
	case r.Batch > 0:
		return min(r.Batch, n)
	case r.BatchPercent > 0:
		return max(1, min(n, (n*r.BatchPercent+99)/100))
	default:
		return n
	}
}

// normalize fills defaults and checks the request; errors wrap ErrInvalid.
func (r Request) normalize() (Request, error) {
	invalid := func(format string, args ...any) (Request, error) {
		return r, fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	switch {
	case r.Ensure == nil && r.Manifest == nil:
		return invalid("a resource to ensure or a manifest is required")
	case r.Ensure != nil && r.Manifest != nil:
		return invalid("give a resource to ensure or a manifest, not both")
	case r.MaxRequestBytes < 0:
		return invalid("max request bytes %d is negative", r.MaxRequestBytes)
	case r.TTL < 0 || r.TTL > protocol.MaxFleetTTL:
		return invalid("ttl %s must be between 0 and %s", r.TTL, protocol.MaxFleetTTL)
	case r.Timeout < 0:
		return invalid("timeout %s is negative", r.Timeout)
	case r.DiscoveryTimeout < 0:
		return invalid("discovery timeout %s is negative", r.DiscoveryTimeout)
	case r.DiscoveryQuiet < 0:
		return invalid("discovery quiet window %s is negative", r.DiscoveryQuiet)
	case r.Batch < 0:
		return invalid("batch size %d is negative", r.Batch)
	case r.BatchPercent < 0 || r.BatchPercent > 100:
		return invalid("batch percentage %d must be between 1 and 100", r.BatchPercent)
	case r.Batch > 0 && r.BatchPercent > 0:
		return invalid("give a batch size or a batch percentage, not both")
	case r.BatchSleep < 0:
		return invalid("batch sleep %s is negative", r.BatchSleep)
	case len(r.Hosts) > protocol.MaxTargets:
		return invalid("%d hosts, the limit is %d", len(r.Hosts), protocol.MaxTargets)
	case r.Async && r.batching():
		return invalid("an asynchronous request cannot be batched: batches wait for replies")
	}
	mode, err := ParseDiscoveryMode(string(r.Discovery))
	if err != nil {
		return r, err
	}
	r.Discovery = mode
	if err := r.Narrow.Validate(); err != nil {
		return r, err
	}
	if r.Ensure != nil {
		if err := r.Ensure.Validate(); err != nil {
			return invalid("%s", protocol.AsError(err).Message)
		}
		if err := CheckEnsure(r.Ensure); err != nil {
			return r, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	if r.Manifest != nil && (len(r.Manifest.Manifest) == 0 || string(r.Manifest.Manifest) == "null") {
		return invalid("the manifest bundle has no manifest document")
	}
	if err := r.Filter.Compile(); err != nil {
		return r, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for _, h := range r.Hosts {
		if err := protocol.ValidateIdentity(h); err != nil {
			return r, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	if r.TTL == 0 {
		r.TTL = DefaultTTL
	}
	if r.Timeout == 0 {
		r.Timeout = DefaultTimeout
		r.Timeout = max(r.Timeout, catalog.ReplyTimeout(r.types()...))
	}
	if r.DiscoveryTimeout == 0 {
		r.DiscoveryTimeout = DefaultDiscoveryTimeout
	}
	if r.DiscoveryQuiet == 0 {
		r.DiscoveryQuiet = DefaultDiscoveryQuiet
	}
	if r.MaxRequestBytes == 0 {
		r.MaxRequestBytes = protocol.DefaultMaxBytes
	}
	return r, nil
}

// types lists the resource types the request declares: its resource's,
// or those of its manifest's resources as written (a manifest the
// orchestrator cannot read declares none here; every agent refuses it).
func (r *Request) types() []string {
	if r.Ensure != nil {
		return []string{r.Ensure.Type}
	}
	if r.Manifest == nil {
		return nil
	}
	m, err := manifest.Parse(r.Manifest.Manifest, manifest.ParseOptions{MaxBytes: r.MaxRequestBytes})
	if err != nil {
		return nil
	}
	var types []string
	for _, u := range m.Unexpanded() {
		types = append(types, u.Type)
	}
	return types
}

// explicitHosts returns the expected set when it is known without
// discovery: Hosts, or the filter's --host identities when the filter has
// only exact identities and no --where terms or select expression, or
// else, without --where terms or select expression, Narrow.Only kept by
// the filter's --host terms.
func (r *Request) explicitHosts() ([]string, bool) {
	if len(r.Hosts) > 0 {
		return uniqueSorted(r.Hosts), true
	}
	if r.Filter != nil && (len(r.Filter.Where) > 0 || r.Filter.Select != "") {
		return nil, false
	}
	if hosts, ok := exactHosts(r.Filter); ok {
		return hosts, true
	}
	if r.Narrow == nil || r.Narrow.Only == nil {
		return nil, false
	}
	hosts := []string{}
	for _, id := range uniqueSorted(r.Narrow.Only) {
		if r.Filter.Match(map[string]any{"identity": id}) {
			hosts = append(hosts, id)
		}
	}
	return hosts, true
}

// targeted reports whether the request must list its expected set as
// targets wherever it is sent: the set is not simply what the filter
// selects.
func (r *Request) targeted() bool { return len(r.Hosts) > 0 || r.Narrow.active() }

// body encodes a manifest body for request id once (nil for an ensure request), checks
// that a request carrying it fits MaxRequestBytes, and returns how to name
// the resources of the replies.
func (r *Request) body(id string) (json.RawMessage, *refNamer, error) {
	if r.Ensure != nil {
		return nil, ensureRefs(requestedRef(r.Ensure)), nil
	}
	body, err := json.Marshal(r.Manifest)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: manifest bundle: %w", ErrInvalid, err)
	}
	probe := protocol.NewFleetRequest(id, time.Now(), r.TTL)
	probe.Noop, probe.Filter, probe.Manifest = r.Noop, r.Filter, body
	if _, err := encodeRequest(probe, r.MaxRequestBytes); err != nil {
		return nil, nil, err
	}
	return body, manifestRefs(declaredResources(r.Manifest)), nil
}

// requestedRef is the resource reference as the request names it (before
// the agents expand templates), used to group hosts; "" when the properties
// carry no name.
func requestedRef(e *protocol.EnsureRequest) string {
	props, err := e.PropertiesMap()
	if err != nil {
		return ""
	}
	name, _ := props["name"].(string)
	if name == "" {
		return ""
	}
	return e.Type + "#" + name
}

// templateFacts lists the facts the request's properties, manifest and
// bundled files name (see TemplateFacts).
func (r *Request) templateFacts() []string {
	var texts [][]byte
	if r.Ensure != nil {
		texts = append(texts, r.Ensure.Properties)
	}
	if r.Manifest != nil {
		texts = append(texts, r.Manifest.Manifest)
		for _, f := range r.Manifest.Files {
			texts = append(texts, f)
		}
	}
	return TemplateFacts(texts...)
}
