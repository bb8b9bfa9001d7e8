package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator"
)

// The sites topology of the noop-sites row (docs/topology.md): site
// brokers are ccm-broker children, each a leaf node of the hub with its
// own JetStream domain named after its site; the hub is this process's
// broker, whose history and registry source the sites', and the
// orchestrator connects to the hub.

// leafUser is the user the site brokers authenticate to the hub as.
const leafUser = "sites"

// siteReady is what a ccm-broker site broker prints once its history,
// registry and assignment mirror are set up.
const siteReady = "assignments mirrored from the hub"

// siteBroker is one site broker of the topology.
type siteBroker struct {
	name, url string
}

// siteNames are the names (JetStream domains) of k sites: s1 … sk.
func siteNames(k int) []string {
	names := make([]string, k)
	for i := range names {
		names[i] = fmt.Sprintf("s%d", i+1)
	}
	return names
}

// siteGroups spreads n agents evenly over the sites, each site's share
// over as many processes as their open files need under limit. A site's
// share must fit one broker (a site of a cluster is not benched).
func siteGroups(n int, sites []siteBroker, limit uint64) ([]agentGroup, error) {
	var groups []agentGroup
	for i, count := range parts(n, len(sites)) {
		lay := layoutFor(count, limit)
		if lay.brokers > 1 {
			return nil, fmt.Errorf("bench: site %s: %d agents need %d brokers (each process may open %d files); use more sites",
				sites[i].name, count, lay.brokers, limit)
		}
		for _, c := range parts(count, lay.agentProcs) {
			groups = append(groups, agentGroup{url: sites[i].url, site: sites[i].name, count: c})
		}
	}
	return groups, nil
}

// fleetAndSites measures fleet size n on one cluster (fleet), then, with
// Config.Sites, the noop-sites row of the same size.
func (b *bencher) fleetAndSites(ctx context.Context, n int) ([]Row, error) {
	rows, err := b.fleet(ctx, n)
	if err != nil || b.cfg.Sites == 0 || !b.cfg.wants("noop-sites") {
		return rows, err
	}
	b.logf("%d: noop-sites (%d sites)", n, b.cfg.Sites)
	row, err := b.sitesRow(ctx, n)
	if row != nil {
		row.compare(rows)
		rows = append(rows, *row)
	}
	return rows, err
}

// sitesRow starts the sites topology and n agents spread over its sites,
// waits until the hub's registry lists them all, and measures noop runs
// from the hub with exact accounting. The row is nil when no round ran.
func (b *bencher) sitesRow(ctx context.Context, n int) (*Row, error) {
	dir, err := b.dir(fmt.Sprintf("sites-%d", n))
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	hub, sites, err := b.startHub(ctx, dir, b.cfg.Sites)
	if err != nil {
		return nil, err
	}
	defer hub.stop()
	hub.dl = deadlinesFor(n)
	groups, err := siteGroups(n, sites, b.fdLimit)
	if err != nil {
		return nil, err
	}
	b.logf("%d: starting agents over %d sites (%d processes)", n, len(sites), len(groups))
	agents, err := b.startAgentGroups(ctx, dir, fmt.Sprintf("agents-sites-%d", n), groups)
	if err != nil {
		return nil, err
	}
	defer agents.stop(stopTimeout)
	if err := hub.waitRegistered(ctx, n); err != nil {
		return nil, err
	}
	f := &fleetRun{b: b, s: hub, n: n, agents: agents, client: b.sign.client(hub.nc), files: filepath.Join(dir, "files")}
	if err := f.setup(ctx); err != nil {
		return nil, fmt.Errorf("sites: %w", err)
	}
	row, err := f.measure(ctx, fleetRow{name: "noop-sites", mode: orchestrator.DiscoveryRegistry})
	row.Sites = len(sites)
	return &row, err
}

// startHub starts k site brokers and the hub, this process's broker,
// whose history and registry source the sites'; the hub's peers are the
// site brokers (their CPU counts as the center's), stopped with it.
func (b *bencher) startHub(ctx context.Context, dir string, k int) (*site, []siteBroker, error) {
	ports, err := freePorts(k + 1) // the sites' client ports, the hub's leaf port
	if err != nil {
		return nil, nil, err
	}
	password, err := randomPassword()
	if err != nil {
		return nil, nil, err
	}
	leafURL := fmt.Sprintf("nats-leaf://127.0.0.1:%d", ports[k])
	// The sites first, so the hub's sources find their streams at once
	// (a missing one is retried after seconds); they connect to the hub
	// as soon as it listens.
	peers, sites, err := b.startSiteBrokers(ctx, dir, ports[:k], leafURL, password)
	if err != nil {
		return nil, nil, err
	}
	names := siteNames(k)
	br, err := broker.New(broker.Config{Listen: "127.0.0.1:-1", StoreDir: filepath.Join(dir, "store-hub"),
		LeafNodes: broker.LeafNodesConfig{Listen: fmt.Sprintf("127.0.0.1:%d", ports[k]),
			Users: []broker.LeafUser{{User: leafUser, Password: password}}, Sites: names}})
	if err != nil {
		peers.stop(stopTimeout)
		return nil, nil, fmt.Errorf("bench hub: %w", err)
	}
	hub := &site{b: br, peers: peers, sources: names, dl: deadlinesFor(0)}
	if err := br.Start(ctx); err != nil {
		peers.stop(stopTimeout)
		return nil, nil, fmt.Errorf("bench hub: %w", err)
	}
	hub.url = br.ClientURL()
	hub.urls = []string{hub.url}
	// Sources set up before their site is connected start only after
	// nats-server's retry backoff (up to 2.5 minutes, docs/topology.md).
	if err := waitLeaves(ctx, br, k); err != nil {
		hub.stop()
		return nil, nil, err
	}
	if err := hub.provision(ctx, jsstore.HistoryConfig{Sources: names}, jsstore.RegistryConfig{Sources: names}); err != nil {
		hub.stop()
		return nil, nil, fmt.Errorf("hub: %w", err)
	}
	return hub, sites, nil
}

// leafTimeout bounds the wait for the site brokers' leaf connections.
const leafTimeout = time.Minute

// waitLeaves waits until the hub has k leaf connections, one per site
// broker.
func waitLeaves(ctx context.Context, hub *broker.Broker, k int) error {
	deadline := time.Now().Add(leafTimeout)
	for {
		got := hub.LeafConnections()
		if got >= k {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("bench hub: %d of %d site brokers connected as leaf nodes after %s", got, k, leafTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startSiteBrokers starts one ccm-broker site broker per port, each
// connecting to the hub at leafURL, and waits until every one has set up
// its streams.
func (b *bencher) startSiteBrokers(ctx context.Context, dir string, ports []int, leafURL, password string) (procs, []siteBroker, error) {
	conf := filepath.Join(dir, "site.yaml")
	text := fmt.Sprintf("hub:\n  urls: [%s]\n  user: %s\n  password: %s\n", leafURL, leafUser, password)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		return nil, nil, fmt.Errorf("bench: site configuration: %w", err)
	}
	var names []string
	var args [][]string
	var sites []siteBroker
	for i, name := range siteNames(len(ports)) {
		store := filepath.Join(dir, "store-"+name)
		if err := os.MkdirAll(store, 0o700); err != nil {
			return nil, nil, fmt.Errorf("bench: site %s: %w", name, err)
		}
		listen := fmt.Sprintf("127.0.0.1:%d", ports[i])
		sites = append(sites, siteBroker{name: name, url: "nats://" + listen})
		names = append(names, "site broker "+name)
		args = append(args, []string{"--config", conf, "--site", name, "--listen", listen, "--store", store})
	}
	p, err := startAll(ctx, deadlinesFor(0).start, b.cfg.BrokerBin, siteReady, names, args)
	if err != nil {
		return nil, nil, err
	}
	return p, sites, nil
}

// randomPassword is a fresh password for the site brokers' leaf user.
func randomPassword() (string, error) {
	var buf [16]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return "", fmt.Errorf("bench: leaf password: %w", err)
	}
	return hex.EncodeToString(buf[:]), nil
}

// compare fills the noop-sites row's ratios to its size's floor and signed
// floor, its ratio to the one-cluster noop row (registry discovery) of the
// same size, and its note, from the size's other rows.
func (r *Row) compare(rows []Row) {
	var floor, signed, noop *Row
	for i := range rows {
		switch p := &rows[i]; {
		case p.Agents != r.Agents:
		case p.Name == "floor":
			floor = p
		case p.Name == "floor-signed":
			signed = p
		case p.Name == "noop" && p.Discovery == string(orchestrator.DiscoveryRegistry):
			noop = p
		}
	}
	r.perHost()
	r.ratios(floor, signed)
	if noop != nil && noop.MedianMS > 0 && r.MedianMS > 0 {
		r.OneClusterRatio = round3(r.MedianMS / noop.MedianMS)
	}
	r.Note = sitesNote(r.Agents, r.Sites, r.OneClusterRatio, r.Note)
}

// sitesNote is the noop-sites row's note: the topology, its comparison
// with the one-cluster noop row when that ran (ratio above 0), and the
// last failed round's error, if any.
func sitesNote(n, k int, ratio float64, failure string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d agents over %d sites (leaf nodes, own JetStream domains), orchestrator at the hub", n, k)
	if ratio > 0 {
		fmt.Fprintf(&b, "; median %.3gx the one-cluster noop (registry) median", ratio)
	}
	if failure != "" {
		fmt.Fprintf(&b, "; last failed round: %s", failure)
	}
	return b.String()
}
