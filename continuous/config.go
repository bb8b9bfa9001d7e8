package continuous

import (
	"fmt"
	"time"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/internal/filecheck"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/sources"
)

// Defaults and limits of the configuration, as CCM has them.
const (
	// DefaultConfigPath is where CCM keeps the agent's configuration.
	DefaultConfigPath = "/etc/choria/ccm/config.yaml"
	// DefaultInterval is the time between full applies.
	DefaultInterval = 5 * time.Minute
	// MinInterval is the shortest interval accepted; also the shortest
	// time between two scheduled applies of one manifest.
	MinInterval = 30 * time.Second
	// MinHealthCheckInterval is the shortest health_check_interval.
	MinHealthCheckInterval = time.Second
	// MinFactsInterval is the shortest time between two fact gatherings.
	MinFactsInterval = 2 * time.Minute
	// DefaultCacheDir is where remote bundles are unpacked.
	DefaultCacheDir = "/etc/choria/ccm/source"
	// DefaultNATSContext is the NATS context used for obj:// and kv://.
	DefaultNATSContext = "CCM"
	// PollInterval is how often remote sources are fetched again.
	PollInterval = 30 * time.Second
	// MaxManifests bounds the manifest sources of one agent.
	MaxManifests = 64
	// MaxConfigBytes bounds the configuration file.
	MaxConfigBytes = 64 << 10
)

// Registration destinations.
const (
	// RegistrationNATS publishes registrations on core NATS.
	RegistrationNATS = "nats"
	// RegistrationJetStream publishes them into the registration stream.
	RegistrationJetStream = "jetstream"
)

// Config is CCM's agent configuration file. Durations are written as CCM
// writes them ("5m", "1h", "1d").
type Config struct {
	// Interval is the time between full applies of every manifest: at
	// least 30s, default 5m.
	Interval string `json:"interval" yaml:"interval"`
	// HealthCheckInterval is the time between health-check-only runs;
	// empty disables them.
	HealthCheckInterval string `json:"health_check_interval" yaml:"health_check_interval"`
	// Manifests are the sources, each a worker: an absolute path,
	// obj://bucket/key or an http(s) URL of a tarball.
	Manifests []string `json:"manifests" yaml:"manifests"`
	// LogLevel is debug, info, warn or error (default info).
	LogLevel string `json:"log_level" yaml:"log_level"`
	// NATSContext names the NATS context for obj://, kv:// and
	// registration (default CCM).
	NATSContext string `json:"nats_context" yaml:"nats_context"`
	// ExternalDataURL is file://, kv://bucket/key or an http(s) URL of
	// data merged over each manifest's data.
	ExternalDataURL string `json:"external_data_url" yaml:"external_data_url"`
	// CacheDir is where remote bundles are unpacked (default
	// /etc/choria/ccm/source).
	CacheDir string `json:"cache_dir" yaml:"cache_dir"`
	// MonitorPort serves Prometheus metrics on /metrics; 0 disables.
	MonitorPort int `json:"monitor_port" yaml:"monitor_port"`
	// Registration is "nats", "jetstream" or empty (disabled).
	Registration string `json:"registration" yaml:"registration"`

	interval    time.Duration
	healthCheck time.Duration
	sources     []*sources.Source
}

// LoadConfig reads and validates the configuration file at path. Errors
// wrap ErrConfig and name the file.
func LoadConfig(path string) (*Config, error) {
	data, err := filecheck.ReadBounded(path, MaxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, filecheck.Wrap(ErrConfig, err))
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes (exact keys: an unknown or duplicate key is an error
// naming it) and validates a configuration, filling in the defaults.
func ParseConfig(data []byte) (*Config, error) {
	c := &Config{}
	if _, err := protocol.DecodeConfig(data, c, protocol.Limits{MaxBytes: MaxConfigBytes}); err != nil {
		return nil, filecheck.Decode(ErrConfig, err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate fills in defaults and checks every key: the intervals parse
// and respect their minimums, every manifest source parses, the log level
// and registration destination are known and the port is in range.
func (c *Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.NATSContext == "" {
		c.NATSContext = DefaultNATSContext
	}
	if c.CacheDir == "" {
		c.CacheDir = DefaultCacheDir
	}
	c.interval = DefaultInterval
	if c.Interval != "" {
		d, err := fisk.ParseDuration(c.Interval)
		if err != nil {
			return bad("interval %.40q: %v", c.Interval, err)
		}
		c.interval = d
	}
	if c.interval < MinInterval {
		return bad("interval %s must be at least %s", c.interval, MinInterval)
	}
	c.healthCheck = 0
	if c.HealthCheckInterval != "" {
		d, err := fisk.ParseDuration(c.HealthCheckInterval)
		if err != nil {
			return bad("health_check_interval %.40q: %v", c.HealthCheckInterval, err)
		}
		if d < MinHealthCheckInterval {
			return bad("health_check_interval %s must be at least %s", d, MinHealthCheckInterval)
		}
		c.healthCheck = d
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return bad("log_level %.20q must be one of debug, info, warn, error", c.LogLevel)
	}
	switch c.Registration {
	case "", RegistrationNATS, RegistrationJetStream:
	default:
		return bad("registration %.20q must be %q, %q or empty", c.Registration, RegistrationNATS, RegistrationJetStream)
	}
	if c.MonitorPort < 0 || c.MonitorPort > 65535 {
		return bad("monitor_port %d must be between 0 and 65535", c.MonitorPort)
	}
	if len(c.Manifests) > MaxManifests {
		return bad("manifests: %d, the limit is %d", len(c.Manifests), MaxManifests)
	}
	c.sources = nil
	seen := map[string]int{}
	for i, m := range c.Manifests {
		s, err := sources.Parse(m)
		if err != nil {
			return bad("manifests[%d]: %v", i, err)
		}
		if j, dup := seen[s.String()]; dup {
			return bad("manifests[%d]: %s is also manifests[%d]", i, s, j)
		}
		seen[s.String()] = i
		c.sources = append(c.sources, s)
	}
	if c.ExternalDataURL != "" {
		if _, err := ParseDataURL(c.ExternalDataURL); err != nil {
			return bad("external_data_url: %v", err)
		}
	}
	return nil
}

// IntervalDuration is the time between full applies.
func (c *Config) IntervalDuration() time.Duration { return c.interval }

// HealthCheckDuration is the time between health-check-only runs, 0 when
// disabled.
func (c *Config) HealthCheckDuration() time.Duration { return c.healthCheck }

// Sources are the parsed manifest sources, in order.
func (c *Config) Sources() []*sources.Source { return c.sources }
