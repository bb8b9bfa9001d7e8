package agent

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/continuous"
	"github.com/ccm-fleet/ccm/internal/filecheck"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
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
	DefaultHeartbeat       = 30 * time.Second
	DefaultFactsInterval   = 5 * time.Minute
	DefaultHistoryRetry    = 10 * time.Second
	DefaultHistoryTimeout  = 5 * time.Second
	DefaultSpoolMaxRecords = 1000
	DefaultSpoolMaxBytes   = 16 << 20
)

// Bounds of the registry and history settings.
const (
	MinHeartbeat       = 100 * time.Millisecond
	MinFactsInterval   = time.Second
	MaxFactsInterval   = 24 * time.Hour
	MaxHeartbeat       = time.Hour
	MinRegistryTTL     = time.Second
	MaxSpoolMaxRecords = 1000000
	MaxSpoolMaxBytes   = 1 << 30
	// MaxPackageLockTimeout bounds package_lock_timeout.
	MaxPackageLockTimeout = time.Hour
)

// Config is the agent's configuration file (YAML). Zero fields take the
// defaults; command line flags override the file.
type Config struct {
	// Identity names this host on the fleet; default the hostname. Letters,
	// digits, '.', '-' and '_' only.
	Identity string `json:"identity" yaml:"identity"`
	// Site names the site (datacenter, region) this host is in; the agent
	// announces it as the site fact, so `--where site=fra1` selects the
	// site's hosts. Letters, digits, '_' and '-', starting with a letter
	// or a digit, at most 64 (see protocol.ValidateSite). Empty: the host
	// has no site fact unless a custom fact gives one.
	Site string `json:"site" yaml:"site"`
	// SubjectFacts are the facts whose values get their own request
	// subject, so a filter k=v on them reaches only matching hosts;
	// default os, platform, role.
	SubjectFacts []string `json:"subject_facts" yaml:"subject_facts"`
	// Facts are custom facts, overriding gathered ones.
	Facts map[string]string `json:"facts" yaml:"facts"`
	// FactsFile is a YAML or JSON file of custom facts.
	FactsFile string `json:"facts_file" yaml:"facts_file"`
	// FactsInterval is how often the agent gathers its facts again (the
	// facts file included), moving its subscriptions and registry entry
	// when they change; default 5m, between 1s and 24h. SIGHUP gathers
	// them at once.
	FactsInterval time.Duration `json:"facts_interval" yaml:"facts_interval"`
	// MaxConcurrent is how many requests run at once; default 4.
	MaxConcurrent int `json:"max_concurrent" yaml:"max_concurrent"`
	// QueueLength is how many accepted requests may wait; beyond it a
	// request is answered busy at once. Default 64.
	QueueLength int `json:"queue_length" yaml:"queue_length"`
	// MaxRequestBytes bounds a request; default 1 MiB.
	MaxRequestBytes int `json:"max_request_bytes" yaml:"max_request_bytes"`
	// DiffMaxBytes is the content size, on each side, above which a file's
	// diff is a summary line (sizes and checksums) instead of a line diff;
	// default 64 KiB, at most 16 MiB.
	DiffMaxBytes int64 `json:"diff_max_bytes" yaml:"diff_max_bytes"`
	// DefaultTTL is the lifetime of requests that do not give one; default 1m.
	DefaultTTL time.Duration `json:"default_ttl" yaml:"default_ttl"`
	// ShutdownTimeout is how long a stopping agent lets accepted requests
	// finish before cancelling them; default 30s.
	ShutdownTimeout time.Duration `json:"shutdown_timeout" yaml:"shutdown_timeout"`
	// StateDir holds the agent's local state (the history spool); default
	// /var/lib/ccm-agent.
	StateDir string `json:"state_dir" yaml:"state_dir"`
	// Heartbeat is how often the agent refreshes its node registry entry;
	// default 30s, at least 100ms.
	Heartbeat time.Duration `json:"heartbeat" yaml:"heartbeat"`
	// RegistryTTL is how long a registry entry lives after its last
	// refresh, used when this agent creates the registry bucket (an
	// existing bucket keeps its own); default three heartbeats, at least 1s
	// and at least two heartbeats.
	RegistryTTL time.Duration `json:"registry_ttl" yaml:"registry_ttl"`
	// HistoryTimeout bounds one write to the history stream or the
	// registry; default 5s.
	HistoryTimeout time.Duration `json:"history_timeout" yaml:"history_timeout"`
	// HistoryRetry is how often records kept in the spool while JetStream
	// was unavailable are retried; default 10s.
	HistoryRetry time.Duration `json:"history_retry" yaml:"history_retry"`
	// PackageLockTimeout is how long a package install or removal waits
	// for the package manager's lock another process holds (apt:
	// DPkg::Lock::Timeout) before it fails; never past the request's
	// deadline. Zero: the provider's default, 2m.
	PackageLockTimeout time.Duration `json:"package_lock_timeout" yaml:"package_lock_timeout"`
	// SpoolMaxRecords bounds the history spool's records (the oldest are
	// dropped first); default 1000.
	SpoolMaxRecords int `json:"spool_max_records" yaml:"spool_max_records"`
	// SpoolMaxBytes bounds the history spool's size in bytes; default 16 MiB.
	SpoolMaxBytes int64 `json:"spool_max_bytes" yaml:"spool_max_bytes"`
	// Policy is the policy file (see Policy): who may sign requests and
	// for what. Without one every request is refused unless Insecure.
	Policy string `json:"policy" yaml:"policy"`
	// Insecure accepts unsigned requests from anyone (demos and tests
	// only), like insecure: true in the policy.
	Insecure bool `json:"insecure" yaml:"insecure"`
	// AuditLog is the audit log file; default <state_dir>/audit.log.
	AuditLog string `json:"audit_log" yaml:"audit_log"`
	// Sources are CCM-style manifest sources the agent applies on its
	// own beside fleet requests and assignments, with the keys of CCM's
	// agent configuration (interval, health_check_interval, manifests,
	// external_data_url, cache_dir, registration; cache_dir defaults to
	// <state_dir>/sources); their applies are recorded in history. Nil
	// runs none.
	Sources *continuous.Config `json:"sources" yaml:"sources"`

	// Servers are the NATS server URLs (nats://host:4222, tls://host:4222);
	// default: $NATS_URL, the context's url, then nats://127.0.0.1:4222.
	Servers []string `json:"servers" yaml:"servers"`
	// Context names a nats CLI context to take connection settings from;
	// default: $NATS_CONTEXT, then the one chosen with `nats context select`.
	Context string `json:"context" yaml:"context"`
	// Creds is a NATS credentials file (user JWT and nkey seed).
	Creds string `json:"creds" yaml:"creds"`
	// NKey is a NATS nkey seed file; not with Creds.
	NKey string `json:"nkey" yaml:"nkey"`
	// TLS are the client certificate and the CA that verifies the server.
	TLS TLSConfig `json:"tls" yaml:"tls"`
	// InboxPrefix replaces _INBOX as the prefix of the agent's reply
	// subjects, e.g. _INBOX.agent-web1, so NATS permissions can confine it
	// to its own.
	InboxPrefix string `json:"inbox_prefix" yaml:"inbox_prefix"`
	// MetricsListen serves Prometheus metrics on this address, e.g.
	// 127.0.0.1:9100; empty serves none.
	MetricsListen string `json:"metrics_listen" yaml:"metrics_listen"`
	// Log is how the agent logs to stderr.
	Log LogConfig `json:"log" yaml:"log"`
}

// TLSConfig are the TLS files of the NATS connection (PEM).
type TLSConfig struct {
	// Cert and Key are the client certificate and its key; both or neither.
	Cert string `json:"cert" yaml:"cert"`
	Key  string `json:"key" yaml:"key"`
	// CA is the certificate authorities the server is verified against.
	CA string `json:"ca" yaml:"ca"`
}

// Log formats and levels.
const (
	LogFormatText = "text"
	LogFormatJSON = "json"
)

// LogConfig is the agent's logging on stderr.
type LogConfig struct {
	// Format is text (slog's key=value lines, the default) or json (one
	// JSON object a line).
	Format string `json:"format" yaml:"format"`
	// Level is debug, info (the default), warn or error.
	Level string `json:"level" yaml:"level"`
}

// Validate checks the format and level; empty ones take the defaults.
func (l LogConfig) Validate() error {
	switch l.Format {
	case "", LogFormatText, LogFormatJSON:
	default:
		return fmt.Errorf("%w: log.format %q: want text or json", ErrConfig, l.Format)
	}
	switch l.Level {
	case "", "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("%w: log.level %q: want debug, info, warn or error", ErrConfig, l.Level)
	}
	return nil
}

// ValidateConnection checks the NATS connection settings that can be
// checked without reading files or dialing, the site and the log settings;
// Validate includes it, and LoadConfig applies it to the file.
func (c Config) ValidateConnection() error {
	if c.Site != "" {
		if err := protocol.ValidateSite(c.Site); err != nil {
			return fmt.Errorf("%w: site: %w", ErrConfig, err)
		}
	}
	for i, s := range c.Servers {
		u, err := url.Parse(s)
		switch {
		case err != nil:
			return fmt.Errorf("%w: servers[%d]: %w", ErrConfig, i, err)
		case u.Host == "" || strings.Contains(s, ","):
			return fmt.Errorf("%w: servers[%d] %q: want one URL like nats://host:4222", ErrConfig, i, s)
		}
	}
	switch {
	case c.Creds != "" && c.NKey != "":
		return fmt.Errorf("%w: creds and nkey are mutually exclusive", ErrConfig)
	case (c.TLS.Cert == "") != (c.TLS.Key == ""):
		return fmt.Errorf("%w: tls.cert and tls.key go together", ErrConfig)
	case strings.ContainsAny(c.InboxPrefix, "*> \t\r\n") || strings.HasPrefix(c.InboxPrefix, ".") || strings.HasSuffix(c.InboxPrefix, ".") || strings.Contains(c.InboxPrefix, ".."):
		return fmt.Errorf("%w: inbox_prefix %q: want subject tokens without wildcards, e.g. _INBOX.agent-web1", ErrConfig, c.InboxPrefix)
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			return fmt.Errorf("%w: metrics_listen %q: %w", ErrConfig, c.MetricsListen, err)
		}
	}
	return c.Log.Validate()
}

// MaxConfigBytes bounds a configuration file.
const MaxConfigBytes = 1 << 20

// LoadConfig reads a YAML or JSON configuration file with
// protocol.DecodeConfig: exact keys; unknown keys, duplicate keys, anchors
// and invalid UTF-8 are errors. Errors wrap ErrConfig and read `config
// PATH: problem`, naming the key as written.
func LoadConfig(path string) (Config, error) {
	var c Config
	data, err := filecheck.ReadBounded(path, MaxConfigBytes)
	if err != nil {
		return c, fmt.Errorf("config %s: %w", path, filecheck.Wrap(ErrConfig, err))
	}
	if _, err := protocol.DecodeConfig(data, &c, protocol.Limits{MaxBytes: MaxConfigBytes}); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, filecheck.Decode(ErrConfig, err))
	}
	if err := c.ValidateConnection(); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
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
	if c.DiffMaxBytes <= 0 {
		c.DiffMaxBytes = resources.DefaultDiffLimit
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
	if c.Heartbeat <= 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.FactsInterval <= 0 {
		c.FactsInterval = DefaultFactsInterval
	}
	if c.RegistryTTL <= 0 {
		c.RegistryTTL = max(3*c.Heartbeat, MinRegistryTTL)
	}
	if c.HistoryTimeout <= 0 {
		c.HistoryTimeout = DefaultHistoryTimeout
	}
	if c.HistoryRetry <= 0 {
		c.HistoryRetry = DefaultHistoryRetry
	}
	if c.SpoolMaxRecords <= 0 {
		c.SpoolMaxRecords = DefaultSpoolMaxRecords
	}
	if c.SpoolMaxBytes <= 0 {
		c.SpoolMaxBytes = DefaultSpoolMaxBytes
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
	if c.DiffMaxBytes > 16<<20 {
		return fmt.Errorf("%w: diff_max_bytes %d is more than 16 MiB", ErrConfig, c.DiffMaxBytes)
	}
	if c.MaxRequestBytes > 64<<20 {
		return fmt.Errorf("%w: max_request_bytes %d is more than 64 MiB", ErrConfig, c.MaxRequestBytes)
	}
	if c.DefaultTTL > protocol.MaxFleetTTL {
		return fmt.Errorf("%w: default_ttl %s is longer than %s", ErrConfig, c.DefaultTTL, protocol.MaxFleetTTL)
	}
	switch {
	case c.Heartbeat < MinHeartbeat || c.Heartbeat > MaxHeartbeat:
		return fmt.Errorf("%w: heartbeat %s must be between %s and %s", ErrConfig, c.Heartbeat, MinHeartbeat, MaxHeartbeat)
	case c.RegistryTTL < MinRegistryTTL || c.RegistryTTL < 2*c.Heartbeat:
		return fmt.Errorf("%w: registry_ttl %s must be at least %s and at least two heartbeats (%s)", ErrConfig, c.RegistryTTL, MinRegistryTTL, 2*c.Heartbeat)
	case c.FactsInterval < MinFactsInterval || c.FactsInterval > MaxFactsInterval:
		return fmt.Errorf("%w: facts_interval %s must be between %s and %s", ErrConfig, c.FactsInterval, MinFactsInterval, MaxFactsInterval)
	case c.HistoryTimeout > time.Minute:
		return fmt.Errorf("%w: history_timeout %s is longer than 1m", ErrConfig, c.HistoryTimeout)
	case c.HistoryRetry > time.Hour:
		return fmt.Errorf("%w: history_retry %s is longer than 1h", ErrConfig, c.HistoryRetry)
	case c.PackageLockTimeout < 0 || c.PackageLockTimeout > MaxPackageLockTimeout:
		return fmt.Errorf("%w: package_lock_timeout %s must be between 0 (the default, 2m) and %s", ErrConfig, c.PackageLockTimeout, MaxPackageLockTimeout)
	case c.SpoolMaxRecords > MaxSpoolMaxRecords:
		return fmt.Errorf("%w: spool_max_records %d is more than %d", ErrConfig, c.SpoolMaxRecords, MaxSpoolMaxRecords)
	case c.SpoolMaxBytes > MaxSpoolMaxBytes:
		return fmt.Errorf("%w: spool_max_bytes %d is more than %d", ErrConfig, c.SpoolMaxBytes, MaxSpoolMaxBytes)
	case c.StateDir == "":
		return fmt.Errorf("%w: state_dir must not be empty", ErrConfig)
	}
	for _, k := range c.SubjectFacts {
		if k == "" {
			return fmt.Errorf("%w: subject_facts has an empty name", ErrConfig)
		}
	}
	if c.Sources != nil {
		if err := validateSources(c.Sources, c.StateDir); err != nil {
			return err
		}
	}
	return c.ValidateConnection()
}
