package agent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ccm-fleet/ccm/protocol"
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("invalid agent configuration")

// Defaults of Config fields left zero.
const (
	DefaultMaxConcurrent   = 4
	DefaultQueueLength     = 64
	DefaultShutdownTimeout = 30 * time.Second
	DefaultStateDir        = "/var/lib/ccm-agent"
	DefaultTTL             = time.Minute
)

// Config is the agent's configuration file (YAML). Zero fields take the
// defaults; command line flags override the file.
type Config struct {
	// Identity names this host on the fleet; default the hostname. Letters,
	// digits, '.', '-' and '_' only.
	Identity string `yaml:"identity"`
	// SubjectFacts are the facts whose values get their own request
	// subject, so a filter k=v on them reaches only matching hosts;
	// default os, platform, role.
	SubjectFacts []string `yaml:"subject_facts"`
	// Facts are custom facts, overriding gathered ones.
	Facts map[string]string `yaml:"facts"`
	// FactsFile is a YAML or JSON file of custom facts.
	FactsFile string `yaml:"facts_file"`
	// MaxConcurrent is how many requests run at once; default 4.
	MaxConcurrent int `yaml:"max_concurrent"`
	// QueueLength is how many accepted requests may wait; beyond it a
	// request is answered busy at once. Default 64.
	QueueLength int `yaml:"queue_length"`
	// MaxRequestBytes bounds a request; default 1 MiB.
	MaxRequestBytes int `yaml:"max_request_bytes"`
	// DefaultTTL is the lifetime of requests that do not give one; default 1m.
	DefaultTTL time.Duration `yaml:"default_ttl"`
	// ShutdownTimeout is how long a stopping agent lets accepted requests
	// finish before cancelling them; default 30s.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// StateDir holds the agent's local state; default /var/lib/ccm-agent.
	StateDir string `yaml:"state_dir"`
}

// LoadConfig reads a YAML configuration file strictly: unknown keys are errors.
func LoadConfig(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
	}
	return c, nil
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.SubjectFacts == nil {
		c.SubjectFacts = protocol.DefaultSubjectFacts()
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = DefaultMaxConcurrent
	}
	if c.QueueLength <= 0 {
		c.QueueLength = DefaultQueueLength
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = protocol.DefaultMaxBytes
	}
	if c.DefaultTTL <= 0 {
		c.DefaultTTL = DefaultTTL
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
	return c
}

// Validate checks a configuration after WithDefaults.
func (c Config) Validate() error {
	if err := protocol.ValidateIdentity(c.Identity); err != nil {
		return fmt.Errorf("%w: identity: %w", ErrConfig, err)
	}
	if c.MaxConcurrent > 1024 {
		return fmt.Errorf("%w: max_concurrent %d is more than 1024", ErrConfig, c.MaxConcurrent)
	}
	if c.QueueLength > 1<<16 {
		return fmt.Errorf("%w: queue_length %d is more than 65536", ErrConfig, c.QueueLength)
	}
	if c.MaxRequestBytes > 64<<20 {
		return fmt.Errorf("%w: max_request_bytes %d is more than 64 MiB", ErrConfig, c.MaxRequestBytes)
	}
	if c.DefaultTTL > protocol.MaxFleetTTL {
		return fmt.Errorf("%w: default_ttl %s is longer than %s", ErrConfig, c.DefaultTTL, protocol.MaxFleetTTL)
	}
	for _, k := range c.SubjectFacts {
		if k == "" {
			return fmt.Errorf("%w: subject_facts has an empty name", ErrConfig)
		}
	}
	return nil
}
