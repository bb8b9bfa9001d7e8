package broker

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// DefaultListen is the client address used when Config.Listen is empty.
const DefaultListen = "127.0.0.1:4222"

// Config configures an embedded broker. The zero value is usable: it listens
// on DefaultListen with a JetStream store in a temporary directory.
type Config struct {
	// Listen is the host:port clients connect to. An empty host listens on
	// every interface; port 0 or -1 picks a free port at start (see
	// Broker.ClientURL). Default DefaultListen.
	Listen string `json:"listen" yaml:"listen"`

	// StoreDir is the JetStream file store directory. When empty, Start
	// creates a temporary directory that Shutdown removes.
	StoreDir string `json:"store_dir" yaml:"store_dir"`

	// MaxStore is the most bytes the JetStream file store may hold. 0
	// sizes it at each start to DefaultStoreFraction of the space the
	// store may use (its disk's free space plus what it already holds); a
	// larger value than that space is capped to it. The choice is logged.
	MaxStore int64 `json:"max_store" yaml:"max_store"`

	// ServerName names this server in the cluster and in monitoring. Empty
	// lets nats-server use its generated id. Required with Cluster.Listen.
	ServerName string `json:"server_name" yaml:"server_name"`

	// Cluster configures routes to other brokers. Clustering is off while
	// Cluster.Listen is empty.
	Cluster ClusterConfig `json:"cluster" yaml:"cluster"`

	// TLS configures TLS for clients (and routes). TLS is off while TLS.Cert
	// is empty; when on, plaintext clients are refused.
	TLS TLSConfig `json:"tls" yaml:"tls"`

	// AuthFile is a YAML file of users (see AuthFile) every client must
	// authenticate as, with their permissions. Empty: no authentication.
	// Broker.Reload reads it again.
	AuthFile string `json:"auth_file" yaml:"auth_file"`

	// ServerLog forwards nats-server's own log lines (notice, warning,
	// error) to the broker's logger. Off by default.
	ServerLog bool `json:"server_log" yaml:"server_log"`

	// Site makes this broker the site broker of the named site: a leaf
	// node of the hub (Hub) whose JetStream domain is the site name.
	// Empty: not a site broker.
	Site string `json:"site" yaml:"site"`

	// Hub is the hub a site broker connects to. Required with Site.
	Hub HubConfig `json:"hub" yaml:"hub"`

	// LeafNodes makes this broker (every broker of the hub cluster) a
	// hub that site brokers connect to. Off while LeafNodes.Listen is
	// empty.
	LeafNodes LeafNodesConfig `json:"leafnodes" yaml:"leafnodes"`

	// Domain is the JetStream domain of a broker that is not a site
	// broker; a hub's defaults to DefaultHubDomain. Empty otherwise.
	Domain string `json:"domain" yaml:"domain"`
}

// ClusterConfig configures the route listener and the routes to peers.
type ClusterConfig struct {
	// Name is the cluster name every peer shares. Required with Listen.
	Name string `json:"name" yaml:"name"`

	// Listen is the host:port other brokers route to; port 0 or -1 picks a
	// free port. Empty disables clustering.
	Listen string `json:"listen" yaml:"listen"`

	// Routes are the peers' route URLs, e.g. "nats-route://10.0.0.2:6222".
	// Required with Listen (JetStream clustering needs them); listing this
	// broker's own route too is allowed, so every peer can share one list.
	Routes []string `json:"routes" yaml:"routes"`
}

// TLSConfig names the PEM files of the broker's certificate.
type TLSConfig struct {
	// Cert is the server certificate file. Setting it turns TLS on.
	Cert string `json:"cert" yaml:"cert"`

	// Key is the private key file of Cert. Required with Cert.
	Key string `json:"key" yaml:"key"`

	// CA is the file of certificate authorities that client (and route)
	// certificates are verified against. Required with Verify and when
	// clustering with TLS, since routes always verify each other.
	CA string `json:"ca" yaml:"ca"`

	// Verify requires every client to present a certificate signed by CA.
	Verify bool `json:"verify" yaml:"verify"`
}

// Enabled reports whether TLS is configured.
func (t TLSConfig) Enabled() bool { return t.Cert != "" || t.Key != "" }

// withDefaults returns the configuration with empty fields defaulted.
func (c Config) withDefaults() Config {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	return c
}

// Validate reports every problem of the configuration (after defaults) in
// one error wrapping ErrInvalidConfig, or nil.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}

	if _, _, err := parseListen(c.Listen); err != nil {
		add("listen %q: %w", c.Listen, err)
	}
	if c.MaxStore < 0 {
		add("max_store %d: must not be negative (0 sizes it from the free space)", c.MaxStore)
	}
	if strings.ContainsAny(c.ServerName, " \t\r\n") {
		add("server_name %q: must not contain whitespace", c.ServerName)
	}

	cl := c.Cluster
	if cl.Listen == "" {
		if len(cl.Routes) > 0 {
			add("cluster.routes: cluster.listen is required to use routes")
		}
	} else {
		if _, _, err := parseListen(cl.Listen); err != nil {
			add("cluster.listen %q: %w", cl.Listen, err)
		}
		if cl.Name == "" {
			add("cluster.name: required with cluster.listen")
		} else if strings.ContainsAny(cl.Name, " \t\r\n") {
			add("cluster.name %q: must not contain whitespace", cl.Name)
		}
		if c.ServerName == "" {
			add("server_name: required with cluster.listen (JetStream clustering needs unique names)")
		}
		if len(cl.Routes) == 0 {
			add("cluster.routes: required with cluster.listen (JetStream clustering; list every peer, this one may be included)")
		}
		for i, r := range cl.Routes {
			if _, err := parseRoute(r); err != nil {
				add("cluster.routes[%d] %q: %w", i, r, err)
			}
		}
	}

	t := c.TLS
	if t.Enabled() {
		if t.Cert == "" {
			add("tls.cert: required with tls.key")
		}
		if t.Key == "" {
			add("tls.key: required with tls.cert")
		}
		if cl.Listen != "" && t.CA == "" {
			add("tls.ca: required when clustering with TLS (routes verify each other)")
		}
	}
	if t.Verify && t.CA == "" {
		add("tls.ca: required with tls.verify")
	}
	if t.Verify && !t.Enabled() {
		add("tls.verify: requires tls.cert and tls.key")
	}
	if t.CA != "" && !t.Enabled() {
		add("tls.ca: requires tls.cert and tls.key")
	}

	c.validateSites(add)

	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
}

// parseListen splits host:port; port 0 or -1 maps to nats-server's random
// port (-1).
func parseListen(s string) (string, int, error) {
	host, ps, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, fmt.Errorf("not host:port: %w", err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return "", 0, fmt.Errorf("port %q is not a number", ps)
	}
	switch {
	case port == 0 || port == -1:
		port = randomPort
	case port < 1 || port > 65535:
		return "", 0, fmt.Errorf("port %d out of range (1-65535, or 0/-1 for random)", port)
	}
	return host, port, nil
}

// parseRoute checks a route URL: nats-route, nats or tls scheme and a
// host:port.
func parseRoute(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "nats-route", "nats", "tls":
	default:
		return nil, fmt.Errorf("scheme %q: want nats-route://, nats:// or tls://", u.Scheme)
	}
	if u.Hostname() == "" || u.Port() == "" {
		return nil, errors.New("want scheme://host:port")
	}
	return u, nil
}
