package broker

import (
	"crypto/tls"
	"fmt"
	"net/url"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// randomPort asks nats-server to pick a free port.
const randomPort = server.RANDOM_PORT

// serverOptions translates a validated configuration into nats-server
// options. clientPort, clusterPort and leafPort, when non-zero, replace the
// configured ports (Restart reuses the ports of the first start).
func serverOptions(c Config, storeDir string, clientPort, clusterPort, leafPort int) (*server.Options, error) {
	host, port, err := parseListen(c.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %q: %w", c.Listen, err)
	}
	if clientPort != 0 {
		port = clientPort
	}

	opts := &server.Options{
		ServerName: c.ServerName,
		Host:       host,
		Port:       port,
		NoLog:      !c.ServerLog,
		NoSigs:     true,
		JetStream:  true,
		StoreDir:   storeDir,
	}

	if c.TLS.Enabled() {
		if err := checkTLSFiles(c.TLS); err != nil {
			return nil, err
		}
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{
			CertFile: c.TLS.Cert,
			KeyFile:  c.TLS.Key,
			CaFile:   c.TLS.CA,
			Verify:   c.TLS.Verify,
		})
		if err != nil {
			return nil, tlsFileError(c.TLS, err)
		}
		opts.TLS = true
		opts.TLSVerify = c.TLS.Verify
		opts.TLSCert = c.TLS.Cert
		opts.TLSKey = c.TLS.Key
		opts.TLSCaCert = c.TLS.CA
		opts.TLSConfig = tc
	}

	if c.Cluster.Listen != "" {
		if err := clusterOptions(opts, c, clusterPort); err != nil {
			return nil, err
		}
	}
	if err := leafOptions(opts, c, leafPort); err != nil {
		return nil, err
	}
	return opts, nil
}

// clusterOptions fills the route listener, routes and route TLS.
func clusterOptions(opts *server.Options, c Config, clusterPort int) error {
	host, port, err := parseListen(c.Cluster.Listen)
	if err != nil {
		return fmt.Errorf("cluster.listen %q: %w", c.Cluster.Listen, err)
	}
	if clusterPort != 0 {
		port = clusterPort
	}
	opts.Cluster.Name = c.Cluster.Name
	opts.Cluster.Host = host
	opts.Cluster.Port = port

	routes := make([]*url.URL, 0, len(c.Cluster.Routes))
	for _, r := range c.Cluster.Routes {
		u, err := parseRoute(r)
		if err != nil {
			return fmt.Errorf("cluster route %q: %w", r, err)
		}
		routes = append(routes, u)
	}
	opts.Routes = routes
	opts.RoutesStr = strings.Join(c.Cluster.Routes, ",")

	if c.TLS.Enabled() {
		// Routes act as client and server of each other: like nats-server's
		// own cluster TLS block, verify both ways against the same CA.
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{
			CertFile: c.TLS.Cert,
			KeyFile:  c.TLS.Key,
			CaFile:   c.TLS.CA,
			Verify:   true,
		})
		if err != nil {
			return tlsFileError(c.TLS, err)
		}
		tc.ClientAuth = tls.RequireAndVerifyClientCert
		tc.RootCAs = tc.ClientCAs
		opts.Cluster.TLSConfig = tc
	}
	return nil
}

// tlsFileError names the configured files in a TLS loading error.
func tlsFileError(t TLSConfig, err error) error {
	return fmt.Errorf("tls (cert %s, key %s, ca %s): %w", orNone(t.Cert), orNone(t.Key), orNone(t.CA), err)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
