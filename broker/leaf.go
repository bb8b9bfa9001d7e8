package broker

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/nats-io/jwt/v2"
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

// hubOptions opens the leaf node listener. Its users are not
// opts.LeafNode.Users, whose permissions nats-server does not apply:
// applyLeafUsers adds them to the client users, where they are.
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

// anonymousUser is the user a hub without an auth file gives the clients
// that connect without credentials (nats-server's no_auth_user): adding
// the site brokers' users to the client users turns authentication on,
// and clients of such a hub never needed any. It may do everything, as
// before, over client and in-process connections only; never as a leaf
// node. The name is reserved.
const anonymousUser = "ccm-broker-anonymous"

// clientConnections are the connection types of every user of a hub that
// is not a site broker's: a leaf node must log in as one of
// leafnodes.users. A new map for each user (nats-server's options own it).
func clientConnections() map[string]struct{} {
	return map[string]struct{}{jwt.ConnectionTypeStandard: {}, jwt.ConnectionTypeInProcess: {}}
}

// applyLeafUsers adds the site brokers' users (leafnodes.users) of a hub
// to the client users of opts, after applyAuth, each with
// LeafPermissions and allowed leaf node connections only. nats-server
// applies a user's permissions to a leaf node connection only when it
// logs in as a client user: the permissions of leafnodes' own users
// (server.LeafNodeOpts.Users) were never applied, and the sites could use
// everything of the hub (issue 39, finding 3). Every other user may no
// longer connect as a leaf node. Without an auth file, clients without
// credentials stay welcome as anonymousUser (password anonymousPW).
func applyLeafUsers(opts *server.Options, c Config, anonymousPW string) error {
	if !c.IsHub() {
		return nil
	}
	taken := map[string]bool{}
	for _, u := range opts.Users {
		taken[u.Username] = true
		if len(u.AllowedConnectionTypes) == 0 {
			u.AllowedConnectionTypes = clientConnections()
		}
	}
	for _, u := range opts.Nkeys {
		if len(u.AllowedConnectionTypes) == 0 {
			u.AllowedConnectionTypes = clientConnections()
		}
	}
	if len(opts.Users) == 0 && len(opts.Nkeys) == 0 {
		opts.Users = []*server.User{{Username: anonymousUser, Password: anonymousPW, AllowedConnectionTypes: clientConnections()}}
		opts.NoAuthUser = anonymousUser
	}
	perms := LeafPermissions(c.JetStreamDomain()).server()
	for i, u := range c.LeafNodes.Users {
		if taken[u.User] {
			return fmt.Errorf("%w: leafnodes.users[%d] (user %s): also a user of the auth file %s; give the site brokers users of their own", ErrInvalidConfig, i, u.User, c.AuthFile)
		}
		opts.Users = append(opts.Users, &server.User{
			Username:               u.User,
			Password:               u.Password,
			Permissions:            perms,
			AllowedConnectionTypes: map[string]struct{}{jwt.ConnectionTypeLeafnode: {}},
		})
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
