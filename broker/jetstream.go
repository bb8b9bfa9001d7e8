package broker

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// InboxPrefix starts the inbox prefix of the broker's own in-process
// connections (InProcessConn): InboxPrefix.<its JetStream domain>, or
// InboxPrefix without a domain. The replies a hub sends to a site broker
// are those of the sites' broker inboxes only (LeafPermissions): a site
// broker asks the hub's JetStream whether it answers for the assignments
// the site mirrors, and no client of a site can read the replies of the
// hub's clients, the hub broker's own included.
const InboxPrefix = "_INBOX.ccm-broker"

// InProcessConn opens a client connection to the running server that does
// not go through the network (nor TLS), for provisioning streams from the
// process that runs the broker. It does not survive Restart. With an auth
// file it authenticates as the broker's own user, which has every right
// and accepts in-process connections only. Its inbox prefix is
// InboxPrefix.<domain> unless opts set another.
func (b *Broker) InProcessConn(opts ...nats.Option) (*nats.Conn, error) {
	b.mu.Lock()
	s, pw, domain := b.srv, b.internalPW, b.cfg.JetStreamDomain()
	b.mu.Unlock()
	if s == nil {
		return nil, ErrNotRunning
	}
	inbox := InboxPrefix
	if domain != "" {
		inbox += "." + domain
	}
	base := []nats.Option{nats.InProcessServer(s), nats.CustomInboxPrefix(inbox)}
	if pw != "" {
		base = append(base, nats.UserInfo(internalUser, pw))
	}
	nc, err := nats.Connect("", append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("broker: in-process connection: %w", err)
	}
	return nc, nil
}

// NumClients is how many client connections the running server has; 0 when
// it is not running.
func (b *Broker) NumClients() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv == nil {
		return 0
	}
	return b.srv.NumClients()
}

// JetStreamPeers returns how many JetStream servers the cluster's meta
// group knows of, as seen by this server: 1 when not clustered, 0 when the
// broker is not running or the cluster has no leader yet.
func (b *Broker) JetStreamPeers() int {
	b.mu.Lock()
	s := b.srv
	b.mu.Unlock()
	if s == nil {
		return 0
	}
	if !s.JetStreamIsClustered() {
		return 1
	}
	info, err := s.Jsz(&server.JSzOptions{})
	if err != nil || info.Meta == nil || info.Meta.Leader == "" {
		return 0
	}
	return info.Meta.Size
}

// ClusterSize is how many brokers the configuration says form the cluster:
// the distinct routes, counting this broker once whether or not its own
// route is listed. It is 1 when not clustered and 0 when not running.
func (b *Broker) ClusterSize() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv == nil {
		return 0
	}
	if b.cfg.Cluster.Listen == "" {
		return 1
	}
	listenHost, _, _ := parseListen(b.cfg.Cluster.Listen)
	seen := map[string]bool{}
	peers := 0
	for _, r := range b.cfg.Cluster.Routes {
		u, err := parseRoute(r)
		if err != nil || seen[u.Host] {
			continue
		}
		seen[u.Host] = true
		if u.Port() == strconv.Itoa(b.clusterPort) && isThisHost(u.Hostname(), listenHost) {
			continue
		}
		peers++
	}
	return peers + 1
}

// isThisHost reports whether host names this machine: the listen host, a
// loopback or unspecified address, localhost, the hostname or an address of
// a local interface.
func isThisHost(host, listenHost string) bool {
	if host == listenHost || host == "localhost" {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && (ip.IsLoopback() || ip.IsUnspecified()) {
		return true
	}
	if h, err := os.Hostname(); err == nil && h == host {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.String() == host {
			return true
		}
	}
	return false
}

// ClientInfo describes one client connection of the running server.
type ClientInfo struct {
	Name          string
	Subscriptions int
}

// Clients lists the running server's client connections (for tests that
// wait for clients to come back after a restart).
func (b *Broker) Clients() []ClientInfo {
	b.mu.Lock()
	s := b.srv
	b.mu.Unlock()
	if s == nil {
		return nil
	}
	cz, err := s.Connz(&server.ConnzOptions{Limit: 100000})
	if err != nil {
		return nil
	}
	out := make([]ClientInfo, 0, len(cz.Conns))
	for _, c := range cz.Conns {
		out = append(out, ClientInfo{Name: c.Name, Subscriptions: int(c.NumSubs)})
	}
	return out
}
