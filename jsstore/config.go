package jsstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/protocol"
)

// History stream defaults and bounds.
const (
	// DefaultHistoryMaxAge is how long records are kept by default.
	DefaultHistoryMaxAge = 30 * 24 * time.Hour
	// MinHistoryMaxAge is the shortest retention accepted.
	MinHistoryMaxAge = time.Minute
	// DuplicateWindow is how long the stream remembers message ids, so a
	// record written again within it (a retry, a spooled copy) is dropped
	// as a duplicate. It is shortened to the retention when that is shorter.
	DuplicateWindow = time.Hour
	// MinHistoryMaxBytes is the smallest size limit accepted.
	MinHistoryMaxBytes = 1 << 20
	// MaxReplicas is the most replicas JetStream keeps of a stream.
	MaxReplicas = 5
)

// Registry defaults and bounds.
const (
	// DefaultRegistryTTL is how long a registry entry lives after its last
	// refresh: three missed heartbeats of the default 30s.
	DefaultRegistryTTL = 90 * time.Second
	// MinRegistryTTL is the shortest entry lifetime accepted.
	MinRegistryTTL = time.Second
	// MaxNodeValueSize bounds one registry entry.
	MaxNodeValueSize = 256 << 10
)

// HistoryConfig configures the history stream. Zero fields take the
// defaults: 1 replica, DefaultHistoryMaxAge, no size limit.
type HistoryConfig struct {
	// Replicas is how many servers keep each record (1 to 5; a cluster
	// needs at least that many JetStream servers).
	Replicas int
	// MaxAge is how long records are kept.
	MaxAge time.Duration
	// MaxBytes bounds the stream; the oldest records go first. 0 or -1:
	// no limit.
	MaxBytes int64
	// Sources are JetStream domains (sites) whose history streams this
	// one sources, each record once: a hub's view of every site.
	Sources []string
}

func (c HistoryConfig) withDefaults() HistoryConfig {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.MaxAge == 0 {
		c.MaxAge = DefaultHistoryMaxAge
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = -1
	}
	return c
}

// Validate checks the configuration after defaults; errors wrap ErrInvalid.
func (c HistoryConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Replicas < 1 || c.Replicas > MaxReplicas:
		return fmt.Errorf("%w: replicas %d must be between 1 and %d", ErrInvalid, c.Replicas, MaxReplicas)
	case c.MaxAge < MinHistoryMaxAge:
		return fmt.Errorf("%w: max age %s is shorter than %s", ErrInvalid, c.MaxAge, MinHistoryMaxAge)
	case c.MaxBytes != -1 && c.MaxBytes < MinHistoryMaxBytes:
		return fmt.Errorf("%w: max bytes %d is less than %d (or -1 for no limit)", ErrInvalid, c.MaxBytes, MinHistoryMaxBytes)
	}
	return validSources(c.Sources)
}

// StreamConfig is the history stream's JetStream configuration: file
// storage, subjects ccm.v1.history.>, oldest records dropped first, message
// ids remembered for DuplicateWindow (at most MaxAge), direct gets allowed.
func (c HistoryConfig) StreamConfig() jetstream.StreamConfig {
	c = c.withDefaults()
	return jetstream.StreamConfig{
		Name:        protocol.HistoryStream,
		Description: "CCM Fleet history: every fleet request and every host's reply",
		Subjects:    []string{protocol.HistorySubjects},
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
		MaxAge:      c.MaxAge,
		MaxBytes:    c.MaxBytes,
		Discard:     jetstream.DiscardOld,
		Duplicates:  min(DuplicateWindow, c.MaxAge),
		AllowDirect: true,
		Sources:     domainSources(protocol.HistoryStream, c.Sources),
	}
}

// RegistryConfig configures the node registry bucket. Zero fields take the
// defaults: 1 replica, DefaultRegistryTTL.
type RegistryConfig struct {
	// Replicas is how many servers keep the bucket (1 to 5).
	Replicas int
	// TTL is how long an entry lives after its last refresh; agents
	// refresh theirs every heartbeat, so it should be a few heartbeats.
	TTL time.Duration
	// Sources are JetStream domains (sites) whose registries this one
	// sources: a hub's view of every site's agents.
	Sources []string
}

func (c RegistryConfig) withDefaults() RegistryConfig {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.TTL == 0 {
		c.TTL = DefaultRegistryTTL
	}
	return c
}

// Validate checks the configuration after defaults; errors wrap ErrInvalid.
func (c RegistryConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Replicas < 1 || c.Replicas > MaxReplicas:
		return fmt.Errorf("%w: replicas %d must be between 1 and %d", ErrInvalid, c.Replicas, MaxReplicas)
	case c.TTL < MinRegistryTTL:
		return fmt.Errorf("%w: registry ttl %s is shorter than %s", ErrInvalid, c.TTL, MinRegistryTTL)
	}
	return validSources(c.Sources)
}

// KeyValueConfig is the registry bucket's configuration: one value per
// key, entries expiring TTL after their last write, file storage.
func (c RegistryConfig) KeyValueConfig() jetstream.KeyValueConfig {
	c = c.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:       protocol.NodesBucket,
		Description:  "CCM Fleet node registry: identity, facts, version, last seen",
		History:      1,
		TTL:          c.TTL,
		Storage:      jetstream.FileStorage,
		Replicas:     c.Replicas,
		MaxValueSize: MaxNodeValueSize,
		Sources:      domainSources(protocol.NodesBucket, c.Sources),
	}
}

// domainSources sources the stream (or bucket) name from each domain; nil
// without domains.
func domainSources(name string, domains []string) []*jetstream.StreamSource {
	var out []*jetstream.StreamSource
	for _, d := range domains {
		out = append(out, &jetstream.StreamSource{Name: name, Domain: d})
	}
	return out
}

// validSources checks the source domains: non-empty, one subject token
// each, no repeats.
func validSources(domains []string) error {
	seen := map[string]bool{}
	for _, d := range domains {
		if d == "" || strings.ContainsAny(d, ".*> \t\r\n") {
			return fmt.Errorf("%w: source domain %q is not a subject token", ErrInvalid, d)
		}
		if seen[d] {
			return fmt.Errorf("%w: source domain %q listed twice", ErrInvalid, d)
		}
		seen[d] = true
	}
	return nil
}
