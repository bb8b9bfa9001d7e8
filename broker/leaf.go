package broker

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/nats-io/nats-server/v2/server"
)

// leafOptions fills the JetStream domain and the leaf node settings of a
// hub (a leaf node listener with its users) or of a site broker (a remote:
// the hub), translated to nats-server's options. leafPort, when non-zero,
// replaces the configured leaf node port (Restart reuses the first one).
// Errors name the key or file at fault and wrap ErrInvalidConfig.
func leafOptions(opts *server.Options, c Config, leafPort int) error {
	opts.JetStreamDomain = c.JetStreamDomain()
	switch {
	case c.IsSite():
		return siteOptions(opts, c)
	case c.IsHub():
		return hubOptions(opts, c, leafPort)
	}
	return nil
}

// siteOptions makes the server a leaf node of the hub. The site-local
// subjects are neither exported to the hub nor imported from it.
func siteOptions(opts *server.Options, c Config) error {
	remote := &server.RemoteLeafOpts{
		DenyExports: SiteLocalSubjects,
		DenyImports: SiteLocalSubjects,
	}
	for i, s := range c.Hub.URLs {
		u, err := parseLeafURL(s)
		if err != nil {
			return fmt.Errorf("%w: hub.urls[%d] %q: %w", ErrInvalidConfig, i, redactURL(s), err)
		}
		if u.Scheme == "tls" {
			remote.TLS = true
		}
		if c.Hub.User != "" {
			u.User = url.UserPassword(c.Hub.User, c.Hub.Password)
		}
		remote.URLs = append(remote.URLs, u)
	}
	if c.Hub.TLS.enabled() {
		tc, err := hubTLSConfig(c.Hub.TLS)
		if err != nil {
			return err
		}
		remote.TLS = true
		remote.TLSConfig = tc
	}
	opts.LeafNode.Remotes = []*server.RemoteLeafOpts{remote}
	return nil
}

// hubTLSConfig is the client TLS configuration of a site's connection to
// the hub: the hub verified against CA (the system's roots when empty),
// and the site's own certificate when given.
func hubTLSConfig(t HubTLSConfig) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CA != "" {
		caPEM, err := readPEMFile("hub.tls.ca", t.CA, "CERTIFICATE")
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("%w: hub.tls.ca %s: no usable certificate in it", ErrInvalidConfig, t.CA)
		}
		tc.RootCAs = pool
	}
	if t.Cert != "" || t.Key != "" {
		certPEM, err := readPEMFile("hub.tls.cert", t.Cert, "CERTIFICATE")
		if err != nil {
			return nil, err
		}
		keyPEM, err := readPEMFile("hub.tls.key", t.Key, "")
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("%w: hub.tls.key %s does not match hub.tls.cert %s: %w", ErrInvalidConfig, t.Key, t.Cert, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// hubOptions opens the leaf node listener with its users. Each user may
// neither send nor receive the site-local subjects (the sites deny them
// too): a site's records reach the hub by sourcing only.
func hubOptions(opts *server.Options, c Config, leafPort int) error {
	l := c.LeafNodes
	host, port, err := parseListen(l.Listen)
	if err != nil {
		return fmt.Errorf("%w: leafnodes.listen %q: %w", ErrInvalidConfig, l.Listen, err)
	}
	if leafPort != 0 {
		port = leafPort
	}
	opts.LeafNode.Host = host
	opts.LeafNode.Port = port
	opts.LeafNode.Users = nil
	for _, u := range l.Users {
		opts.LeafNode.Users = append(opts.LeafNode.Users, &server.User{
			Username: u.User,
			Password: u.Password,
			Permissions: &server.Permissions{
				Publish:   &server.SubjectPermission{Deny: SiteLocalSubjects},
				Subscribe: &server.SubjectPermission{Deny: SiteLocalSubjects},
			},
		})
	}
	if l.TLS.Enabled() {
		if err := checkTLSFiles(l.TLS); err != nil {
			return fmt.Errorf("leafnodes: %w", err)
		}
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{
			CertFile: l.TLS.Cert,
			KeyFile:  l.TLS.Key,
			CaFile:   l.TLS.CA,
			Verify:   l.TLS.Verify,
		})
		if err != nil {
			return fmt.Errorf("leafnodes: %w", tlsFileError(l.TLS, err))
		}
		opts.LeafNode.TLSConfig = tc
	}
	return nil
}

// boundLeafPort is the leaf node port s listens on; 0 when it accepts no
// leaf connections.
func boundLeafPort(s *server.Server) int {
	v, err := s.Varz(nil)
	if err != nil || v == nil {
		return 0
	}
	return v.LeafNode.Port
}

// LeafURL returns the nats-leaf:// URL site brokers connect to, with the
// port actually bound; "" when the broker is not running or not a hub. It
// stays the same across Restart.
func (b *Broker) LeafURL() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv == nil || !b.cfg.IsHub() || b.leafPort == 0 {
		return ""
	}
	host, _, _ := parseListen(b.cfg.LeafNodes.Listen)
	u := url.URL{Scheme: "nats-leaf", Host: net.JoinHostPort(loopbackFor(host), strconv.Itoa(b.leafPort))}
	return u.String()
}

// LeafConnections is how many leaf node connections the running server
// has: site brokers connected to a hub, or 1 for a site broker connected
// to its hub. 0 when not running.
func (b *Broker) LeafConnections() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv == nil {
		return 0
	}
	return b.srv.NumLeafNodes()
}
