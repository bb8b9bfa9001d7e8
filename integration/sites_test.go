package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
	"github.com/onsi/gomega/types"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
)

// siteBroker is one site's `ccm-broker --site` process and its agents.
type siteBroker struct {
	name    string
	args    []string
	session *gexec.Session
	// fleet's url is the site broker's; its agents connect there only.
	fleet *fleet
}

// start runs the site broker (again, on the same port and store) and
// waits until its history is ready.
func (s *siteBroker) start() {
	GinkgoHelper()
	s.session = runBrokerBinary(s.args, `history stream CCM_HISTORY, node registry CCM_NODES and assignments CCM_ASSIGNMENTS ready \(1 replica\), assignments mirrored from the hub \(domain hub\)\n`)
}

// runBrokerBinary runs ccm-broker with args, stopped when the spec
// ends, and waits for ready on its stderr (when set).
func runBrokerBinary(args []string, ready string) *gexec.Session {
	GinkgoHelper()
	cmd := exec.Command(filepath.Join(filepath.Dir(orchBin), "ccm-broker"), args...)
	s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).ToNot(HaveOccurred())
	DeferCleanup(func() { s.Interrupt(); Eventually(s).WithTimeout(30 * time.Second).Should(gexec.Exit()) })
	if ready != "" {
		Eventually(s.Err).WithTimeout(60 * time.Second).Should(gbytes.Say(ready))
	}
	return s
}

var _ = Describe("Sites: a hub of three brokers with three site brokers as leaf nodes", Ordered, func() {
	const perSite = 4
	var (
		dir         string
		ops         signingKey
		hub         *fleet // ccm-orch at the hub; no agents of its own
		hubSessions []*gexec.Session
		sites       []*siteBroker
		all         []string
		// changeID is the signed change run from the hub
		changeID string
	)

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		ops = newSigningKey(dir, "ops")
		policy := policyFile(dir, signerEntry("ops", ops.pub, "file, exec"))
		ports := freePorts(12) // hub clients, routes, leaf listeners; site clients

		names := []string{"s1", "s2", "s3"}
		var leafURLs, routes, hubURLs []string
		for i := range 3 {
			leafURLs = append(leafURLs, fmt.Sprintf("nats-leaf://127.0.0.1:%d", ports[6+i]))
			routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3+i]))
			hubURLs = append(hubURLs, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
		}
		hubFile := filepath.Join(dir, "hub.yaml")
		Expect(os.WriteFile(hubFile, []byte("leafnodes:\n  users: [{user: sites, password: leaf-pw}]\n  sites: [s1, s2, s3]\n"), 0o600)).To(Succeed())
		siteFile := filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(siteFile, []byte(fmt.Sprintf("hub:\n  urls: [%s]\n  user: sites\n  password: leaf-pw\n", strings.Join(leafURLs, ", "))), 0o600)).To(Succeed())

		// The sites first, so the hub's sources find their streams at
		// once (a missing one is retried after seconds).
		for i, name := range names {
			s := &siteBroker{name: name, args: []string{"--config", siteFile, "--site", name,
				"--listen", fmt.Sprintf("127.0.0.1:%d", ports[9+i]), "--store", GinkgoT().TempDir()}}
			s.start()
			sites = append(sites, s)
		}
		for i := range 3 {
			hubSessions = append(hubSessions, runBrokerBinary([]string{"--config", hubFile, "--name", fmt.Sprintf("h%d", i+1),
				"--listen", fmt.Sprintf("127.0.0.1:%d", ports[i]), "--store", GinkgoT().TempDir(),
				"--cluster-listen", fmt.Sprintf("127.0.0.1:%d", ports[3+i]), "--routes", strings.Join(routes, ","),
				"--leaf-listen", fmt.Sprintf("127.0.0.1:%d", ports[6+i])}, ""))
		}
		// Replicated streams need the whole cluster: wait once all run.
		for _, h := range hubSessions {
			Eventually(h.Err).WithTimeout(60 * time.Second).Should(gbytes.Say(`ready \(3 replicas\), sourcing the history and registry of sites s1,s2,s3`))
		}

		cfg := historyAgentConfig
		cfg.Policy = policy
		for i, s := range sites {
			s.fleet = startFleetWith(fleetOptions{servers: []string{fmt.Sprintf("nats://127.0.0.1:%d", ports[9+i])}, config: cfg},
				perSite, s.name, map[string]any{"site": s.name, "os": "debian"})
			all = append(all, s.fleet.identitiesOf()...)
		}
		slices.Sort(all)
		hub = &fleet{url: hubURLs[0]}
	})

	It("discovers every site's hosts at the hub", func() {
		Expect(fleettest.WaitRegistered(hub.url, all)).To(Succeed())
		code, out, errOut := hub.orch("discover", "--discovery", "registry", "--json")
		Expect(code).To(Equal(0), errOut)
		var nodes []map[string]any
		Expect(json.Unmarshal([]byte(out), &nodes)).To(Succeed())
		Expect(nodes).To(HaveLen(3 * perSite))

		code, out, errOut = hub.orch("discover", "--discovery", "registry", "--where", "site=s2", "--json")
		Expect(code).To(Equal(0), errOut)
		nodes = nil
		Expect(json.Unmarshal([]byte(out), &nodes)).To(Succeed())
		Expect(nodes).To(HaveLen(perSite))
	})

	It("runs a signed change from the hub on every site, each host recorded once in the hub's history", func() {
		Expect(fleettest.WaitRegistered(hub.url, all)).To(Succeed())
		target := filepath.Join(dir, "sites-{{ lookup('facts.identity') }}")
		code, doc := hub.orchJSON("ensure", "file", target, "--content", "from the hub", "--owner", "root", "--group", "root", "--mode", "0644", "--key", ops.seedFile)
		Expect(code).To(Equal(0), "%v", doc)
		Expect(doc["replied"]).To(BeNumerically("==", 3*perSite))
		Expect(identities(doc, "no_reply")).To(BeEmpty())
		Expect(doc["spoofed"]).To(BeNumerically("==", 0))
		Expect(doc["unverified"]).To(BeNumerically("==", 0), "every reply is checked against the hub's registry, sourced from the sites")
		for _, id := range all {
			Expect(filepath.Join(dir, "sites-"+id)).To(BeAnExistingFile())
		}
		id := doc["request_id"].(string)
		changeID = id
		Eventually(func() map[string]uint64 { return runRecords(hub.url, id) }).WithTimeout(60 * time.Second).Should(Equal(exactlyOnce(id, all)))
		Consistently(func() map[string]uint64 { return runRecords(hub.url, id) }, 2*time.Second, 500*time.Millisecond).Should(Equal(exactlyOnce(id, all)))
		// Each site holds its own hosts' records and not the hub's
		// request record.
		s1 := sites[0].fleet
		Expect(runRecords(s1.url, id)).To(Equal(exactlyOnceHosts(id, s1.identitiesOf())))
	})

	It("reports a site killed mid-run as that site's no-replies, and completes the hub's history once it returns", func() {
		Expect(fleettest.WaitRegistered(hub.url, all)).To(Succeed())
		b := newBlocker()
		s := hub.start("ensure", "exec", b.command(), "--json", "--reply-timeout", "12s", "--key", ops.seedFile)
		Eventually(b.started).WithTimeout(60 * time.Second).Should(Equal(3 * perSite))

		dark := sites[2]
		dark.session.Kill()
		Eventually(dark.session).WithTimeout(30 * time.Second).Should(gexec.Exit())
		b.release()

		Eventually(s).WithTimeout(120 * time.Second).Should(gexec.Exit(3))
		var live map[string]any
		Expect(json.Unmarshal(s.Out.Contents(), &live)).To(Succeed())
		darkIDs := dark.fleet.identitiesOf()
		Expect(identities(live, "no_reply")).To(Equal(darkIDs))
		Expect(live["replied"]).To(BeNumerically("==", 2*perSite))
		// The no-replies are the dark site's, grouped and named as such.
		hosts := make([]any, len(darkIDs))
		for i, h := range darkIDs {
			hosts[i] = h
		}
		Expect(live["no_reply_by_site"]).To(Equal([]any{
			map[string]any{"site": dark.name, "count": float64(perSite), "hosts": hosts},
		}))
		id := live["request_id"].(string)

		// The text report, of a run while the site is still dark, names
		// the site and lists its hosts under it.
		code, out, errOut := hub.orch("ensure", "exec", "/bin/true", "--reply-timeout", "3s", "--key", ops.seedFile)
		Expect(code).To(Equal(3), errOut)
		Expect(out).To(ContainSubstring(fmt.Sprintf("%d hosts did not reply (site %s: %d):\n    site %s: %s\n",
			perSite, dark.name, perSite, dark.name, strings.Join(darkIDs, ", "))))
		Expect(out).To(ContainSubstring(fmt.Sprintf("%d expected, %d replied", 3*perSite, 2*perSite)))

		dark.start()
		back := time.Now()
		Eventually(dark.fleet.spooled).WithTimeout(60 * time.Second).Should(BeZero())
		// The hub's leader steps down when a returning site's sourcing
		// stays stalled (ccm-broker's sourcing watch), so the records
		// come within seconds; the bound is nats-server's own worst case
		// (docs/topology.md): a consumer request outstanding 30 s, then a
		// retry backoff of at most 2 minutes.
		Eventually(func() map[string]uint64 { return runRecords(hub.url, id) }).WithTimeout(sourcingResumeBound).WithPolling(time.Second).Should(Equal(exactlyOnce(id, all)))
		fmt.Fprintf(GinkgoWriter, "sites timing: the hub's history complete %.1fs after the site broker was back\n", time.Since(back).Seconds())
		Consistently(func() map[string]uint64 { return runRecords(hub.url, id) }, 2*time.Second, 500*time.Millisecond).Should(Equal(exactlyOnce(id, all)))
		code, out, errOut = hub.orch("history", "show", id)
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring(fmt.Sprintf("%d expected, %d replied: 0 ok, %d changed, 0 failed, 0 no reply", 3*perSite, 3*perSite, 3*perSite)))
	})

	It("runs an assignment stored at the hub on every site's hosts, and refuses to store one at a site", func() {
		Expect(fleettest.WaitRegistered(hub.url, all)).To(Succeed())
		manifest := filepath.Join(dir, "everywhere.yaml")
		Expect(os.WriteFile(manifest, []byte(fmt.Sprintf(`ccm:
  resources:
    - file:
        - %s:
            content: "assigned at the hub"
            owner: root
            group: root
            mode: "0644"
`, filepath.Join(dir, "assigned-{{ lookup('facts.identity') }}"))), 0o644)).To(Succeed())
		code, out, errOut := hub.orch("assign", "everywhere", manifest, "--interval", "1h", "--key", ops.seedFile)
		Expect(code).To(Equal(0), out+errOut)
		stored := time.Now()
		// Every site's mirror takes it from the hub. The site killed in
		// the spec before ran again only for that spec: it starts again
		// here, and its mirror resumes.
		for _, s := range sites {
			if s.session.ExitCode() != -1 {
				s.start()
			}
		}
		for _, s := range sites {
			Eventually(func() string {
				_, out, errOut := s.fleet.orch("assignments", "list")
				return out + errOut
			}).WithTimeout(sourcingResumeBound).WithPolling(time.Second).Should(ContainSubstring("everywhere"), "site %s's mirror", s.name)
			fmt.Fprintf(GinkgoWriter, "sites timing: site %s's mirror holds the assignment %.1fs after it was stored\n", s.name, time.Since(stored).Seconds())
		}
		for _, id := range all {
			Eventually(filepath.Join(dir, "assigned-"+id)).WithTimeout(60*time.Second).Should(BeAnExistingFile(), "host %s ran the hub's assignment", id)
		}
		// A site's store mirrors the hub's: it lists the assignment, and
		// storing one there is refused with the reason.
		site := sites[1].fleet
		code, out, errOut = site.orch("assignments", "list")
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring("everywhere"))
		code, out, errOut = site.orch("assign", "site-own", manifest, "--interval", "1h", "--key", ops.seedFile)
		Expect(code).ToNot(Equal(0), out)
		Expect(errOut).To(ContainSubstring("this assignment bucket mirrors the hub's (domain hub): store and remove assignments with a ccm-orch connected to the hub"))
	})

	It("shows every site's hosts, runs and assignments on the dashboard served at the hub", func() {
		Expect(changeID).ToNot(BeEmpty(), "the signed change ran")
		addr := freeAddr()
		ui := hub.start("ui", "--listen", addr)
		DeferCleanup(func() { ui.Interrupt(); Eventually(ui).WithTimeout(30 * time.Second).Should(gexec.Exit()) })
		Eventually(ui.Out).WithTimeout(30 * time.Second).Should(gbytes.Say("CCM Fleet dashboard on"))
		get := func(path string) func() string {
			return func() string {
				resp, err := http.Get("http://" + addr + path)
				if err != nil {
					return err.Error()
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
				return string(b)
			}
		}
		var matchers []types.GomegaMatcher
		for _, id := range all {
			matchers = append(matchers, ContainSubstring(`"`+id+`"`))
		}
		Eventually(get("/api/v1/fleet")).WithTimeout(30*time.Second).Should(And(matchers...), "the fleet at the hub lists every site's hosts")
		Eventually(get("/api/v1/runs/"+changeID)).WithTimeout(30*time.Second).Should(And(matchers...), "the hub's run holds every site's replies")
		Eventually(get("/api/v1/assignments")).WithTimeout(30 * time.Second).Should(ContainSubstring("everywhere"))
	})

	// Issue 39, finding 3: a plain client of a site broker reached the
	// hub's JetStream through the domain hub across the leaf connection.
	// The hub's leaf users are an allow-list now (docs/security.md).
	It("refuses a plain client of a site broker a put into the hub's assignments, a purge of its history and a delete of its registry, through domain hub", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		hubNC, err := nats.Connect(hub.url)
		Expect(err).ToNot(HaveOccurred())
		defer hubNC.Close()
		hubJS, err := jetstream.New(hubNC)
		Expect(err).ToNot(HaveOccurred())
		msgs := func(stream string) uint64 {
			GinkgoHelper()
			s, err := hubJS.Stream(ctx, stream)
			Expect(err).ToNot(HaveOccurred(), "the hub's %s", stream)
			return s.CachedInfo().State.Msgs
		}
		historyBefore := msgs(protocol.HistoryStream)
		Expect(historyBefore).To(BeNumerically(">", 0))
		nodesBefore := msgs("KV_" + protocol.NodesBucket)
		Expect(nodesBefore).To(BeNumerically(">", 0))

		site, err := nats.Connect(sites[0].fleet.url)
		Expect(err).ToNot(HaveOccurred())
		defer site.Close()
		var through []string
		try := func(subject string, body []byte) {
			m, err := site.Request(subject, body, 2*time.Second)
			switch {
			case errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout):
			case err != nil:
				through = append(through, subject+": "+err.Error())
			case !strings.Contains(string(m.Data), `"error"`):
				through = append(through, subject+" answered "+string(m.Data))
			}
		}
		// (a) a put into the hub's CCM_ASSIGNMENTS (mirrored to every
		// site), through the domain and raw
		try("$JS.hub.API.$KV."+protocol.AssignmentsBucket+".canary-leaf-a", []byte("canary-leaf-a"))
		try("$KV."+protocol.AssignmentsBucket+".canary-leaf-raw", []byte("canary-leaf-raw"))
		// (b) a purge of CCM_HISTORY, (c) a delete of the registry's stream
		try("$JS.hub.API.STREAM.PURGE."+protocol.HistoryStream, nil)
		try("$JS.hub.API.STREAM.DELETE.KV_"+protocol.NodesBucket, nil)
		// another site's JetStream, through the hub
		try("$JS.s2.API.STREAM.PURGE."+protocol.HistoryStream, nil)
		Expect(through).To(BeEmpty(), "what a plain client of site s1's broker did to the hub's JetStream")

		// The hub's data is unchanged: the keys absent, the history not
		// purged, the registry still there. (Agents may add history and
		// registry entries meanwhile, never fewer.)
		kv, err := hubJS.KeyValue(ctx, protocol.AssignmentsBucket)
		Expect(err).ToNot(HaveOccurred())
		for _, key := range []string{"canary-leaf-a", "canary-leaf-raw"} {
			_, err = kv.Get(ctx, key)
			Expect(errors.Is(err, jetstream.ErrKeyNotFound)).To(BeTrue(), "key %s at the hub: %v", key, err)
		}
		Expect(msgs(protocol.HistoryStream)).To(BeNumerically(">=", historyBefore))
		Expect(msgs("KV_" + protocol.NodesBucket)).To(BeNumerically(">=", nodesBefore))
		Expect(fleettest.WaitRegistered(hub.url, all)).To(Succeed())
		// Site s2's history is not purged either.
		Expect(runRecords(sites[1].fleet.url, changeID)).To(Equal(exactlyOnceHosts(changeID, sites[1].fleet.identitiesOf())))
		// And the sites' mirrors still hold the hub's assignments (site
		// s3 ran again only for the specs before).
		for _, s := range sites[:2] {
			_, out, errOut := s.fleet.orch("assignments", "list")
			Expect(out+errOut).To(ContainSubstring("everywhere"), "site %s's mirror", s.name)
		}
	})

	It("runs an orchestrator at a site on that site alone while the hub is up", func() {
		site := sites[1].fleet
		target := filepath.Join(dir, "s2-only-{{ lookup('facts.identity') }}")
		code, doc := site.orchJSON("ensure", "file", target, "--content", "s2", "--owner", "root", "--group", "root", "--mode", "0644", "--key", ops.seedFile)
		Expect(code).To(Equal(0), "%v", doc)
		Expect(doc["replied"]).To(BeNumerically("==", perSite))
		Expect(identities(doc, "unexpected")).To(BeEmpty())
		for _, id := range all {
			if strings.HasPrefix(id, "s2-") {
				Expect(filepath.Join(dir, "s2-only-"+id)).To(BeAnExistingFile())
			} else {
				Expect(filepath.Join(dir, "s2-only-"+id)).NotTo(BeAnExistingFile(), "a host of another site ran the site's request")
			}
		}
	})

	It("runs an orchestrator at a site on that site alone while the hub is down", func() {
		for _, h := range hubSessions {
			h.Interrupt()
		}
		for _, h := range hubSessions {
			Eventually(h).WithTimeout(30 * time.Second).Should(gexec.Exit(0))
		}
		site := sites[0].fleet
		code, doc := site.orchJSON("ensure", "exec", "/bin/true", "--key", ops.seedFile)
		Expect(code).To(Equal(0), "%v", doc)
		Expect(doc["replied"]).To(BeNumerically("==", perSite))
		Expect(doc["discovery"]).To(Equal("registry"))
		Expect(identities(doc, "no_reply")).To(BeEmpty())
		Expect(identities(doc, "unexpected")).To(BeEmpty())
		id := doc["request_id"].(string)
		Eventually(func() map[string]uint64 { return runRecords(site.url, id) }).WithTimeout(30 * time.Second).Should(Equal(exactlyOnce(id, site.identitiesOf())))
		// The hub's assignments stay at the site, in its mirror.
		code, out, errOut := site.orch("assignments", "list")
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring("everywhere"))
	})
})

// sourcingResumeBound is the longest a hub may take to source a returning
// site's records without the sourcing watch's help: a source consumer
// request outstanding for 30 s, then nats-server's longest retry backoff of
// 2 minutes, and a margin for a loaded machine.
const sourcingResumeBound = 30*time.Second + 2*time.Minute + 30*time.Second

// exactlyOnceHosts is exactlyOnce without the request's own record (kept
// where the request was sent from).
func exactlyOnceHosts(id string, ids []string) map[string]uint64 {
	want := exactlyOnce(id, ids)
	delete(want, protocol.HistoryRequestSubject(id))
	return want
}

var _ = Describe("Sites with the shipped locked-down users", func() {
	It("still denies every cross-host action when the hosts are on different sites", func() {
		dir := GinkgoT().TempDir()
		orch, web1, web2 := brokertest.NewUser(GinkgoT(), dir), brokertest.NewUser(GinkgoT(), dir), brokertest.NewUser(GinkgoT(), dir)
		example, err := os.ReadFile(filepath.Join("..", "dist", "broker-auth.yaml"))
		Expect(err).ToNot(HaveOccurred())
		doc := strings.NewReplacer("ORCHESTRATOR_NKEY", orch.Public, "WEB1_NKEY", web1.Public, "WEB2_NKEY", web2.Public).Replace(string(example))
		doc += "  - user: admin\n    password: admin-pw\n"
		auth := filepath.Join(dir, "auth.yaml")
		Expect(os.WriteFile(auth, []byte(doc), 0o600)).To(Succeed())

		leafUser := broker.LeafUser{User: "sites", Password: "leaf-pw"}
		hub := brokertest.StartConfig(GinkgoT(), broker.Config{AuthFile: auth,
			LeafNodes: broker.LeafNodesConfig{Listen: "127.0.0.1:-1", Users: []broker.LeafUser{leafUser}, Sites: []string{"fra1", "ams1"}}})
		siteOf := func(name string) *broker.Broker {
			return brokertest.StartConfig(GinkgoT(), broker.Config{AuthFile: auth, Site: name,
				Hub: broker.HubConfig{URLs: []string{hub.LeafURL()}, User: leafUser.User, Password: leafUser.Password}})
		}
		fra, ams := siteOf("fra1"), siteOf("ams1")
		Eventually(hub.LeafConnections).Should(Equal(2))

		type conn struct {
			nc   *nats.Conn
			errs chan error
		}
		login := func(url string, u brokertest.User, inbox string) conn {
			GinkgoHelper()
			c := conn{errs: make(chan error, 16)}
			o, err := nats.NkeyOptionFromSeed(u.SeedFile)
			Expect(err).ToNot(HaveOccurred())
			c.nc, err = nats.Connect(url, o, nats.CustomInboxPrefix(inbox), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				select {
				case c.errs <- err:
				default:
				}
			}))
			Expect(err).ToNot(HaveOccurred())
			DeferCleanup(c.nc.Close)
			return c
		}
		o := login(hub.ClientURL(), orch, "_INBOX.orch")
		w1 := login(fra.ClientURL(), web1, "_INBOX.agent-web1")
		w2 := login(ams.ClientURL(), web2, "_INBOX.agent-web2")

		// Watchers that may see everything, at the hub and at each site.
		seen := make(chan string, 1024)
		for _, url := range []string{hub.ClientURL(), fra.ClientURL(), ams.ClientURL()} {
			admin, err := nats.Connect(url, nats.UserInfo("admin", "admin-pw"))
			Expect(err).ToNot(HaveOccurred())
			DeferCleanup(admin.Close)
			_, err = admin.Subscribe(">", func(m *nats.Msg) {
				select {
				case seen <- m.Subject + " " + string(m.Data):
				default:
				}
			})
			Expect(err).ToNot(HaveOccurred())
			Expect(admin.Flush()).To(Succeed())
		}

		// Each agent answers its own node's requests from the hub.
		const node1, node2 = "ccm.v1.req.node.web1%2Eexample%2Ecom", "ccm.v1.req.node.web2%2Eexample%2Ecom"
		got1 := make(chan string, 16)
		_, err = w1.nc.Subscribe(node1, func(m *nats.Msg) { got1 <- string(m.Data); _ = m.Respond([]byte("web1 ok")) })
		Expect(err).ToNot(HaveOccurred())
		_, err = w2.nc.Subscribe(node2, func(m *nats.Msg) { _ = m.Respond([]byte("canary-web2-reply-5d1")) })
		Expect(err).ToNot(HaveOccurred())
		Expect(w1.nc.Flush()).To(Succeed())
		Expect(w2.nc.Flush()).To(Succeed())
		Eventually(func() (string, error) {
			m, err := o.nc.Request(node1, []byte("to web1"), 500*time.Millisecond)
			if err != nil {
				return "", err
			}
			return string(m.Data), nil
		}).Should(Equal("web1 ok"))

		// web2 at ams1 may not listen to web1's requests (at fra1)...
		stolen := make(chan string, 16)
		_, err = w2.nc.Subscribe(node1, func(m *nats.Msg) { stolen <- string(m.Data) })
		Expect(err).ToNot(HaveOccurred())
		Eventually(w2.errs).Should(Receive(MatchError(ContainSubstring("Permissions Violation for Subscription to \"" + node1 + "\""))))
		// ...nor read the orchestrator's replies, which web1 may not either.
		_, err = w1.nc.Subscribe("_INBOX.orch.>", func(m *nats.Msg) { stolen <- string(m.Data) })
		Expect(err).ToNot(HaveOccurred())
		Eventually(w1.errs).Should(Receive(MatchError(ContainSubstring(`Permissions Violation for Subscription to "_INBOX.orch.>"`))))

		m, err := o.nc.Request(node2, []byte("canary-orch-request-to-web2-71c"), 5*time.Second)
		Expect(err).ToNot(HaveOccurred())
		Expect(string(m.Data)).To(Equal("canary-web2-reply-5d1"))
		_, err = o.nc.Request(node1, []byte("canary-orch-request-to-web1-9a2"), 5*time.Second)
		Expect(err).ToNot(HaveOccurred())
		Eventually(got1).Should(Receive(Equal("canary-orch-request-to-web1-9a2")))

		// web1 at fra1 may not send requests to web2 at ams1, nor write
		// web2's history.
		Expect(w1.nc.Publish(node2, []byte("canary-web1-forged-request-3f0"))).To(Succeed())
		Eventually(w1.errs).Should(Receive(MatchError(ContainSubstring(`Permissions Violation for Publish to "` + node2 + `"`))))
		forged := "ccm.v1.history.r1.web2%2Eexample%2Ecom"
		Expect(w1.nc.Publish(forged, []byte("canary-web1-forged-history-b47"))).To(Succeed())
		Eventually(w1.errs).Should(Receive(MatchError(ContainSubstring(`Permissions Violation for Publish to "` + forged + `"`))))
		Expect(w1.nc.Flush()).To(Succeed())
		// Nor may a locked-down client of a site purge or delete the
		// site's streams, or the hub's through domain hub (issue 39,
		// finding 3): web1, and the orchestrator's user logged in at the
		// site.
		so := login(fra.ClientURL(), orch, "_INBOX.orch")
		for _, c := range []conn{w1, so} {
			for _, subj := range []string{"$JS.API.STREAM.PURGE.CCM_HISTORY", "$JS.API.STREAM.DELETE.KV_CCM_NODES",
				"$JS.hub.API.STREAM.PURGE.CCM_HISTORY", "$JS.hub.API.STREAM.DELETE.KV_CCM_NODES", "$JS.hub.API.$KV.CCM_ASSIGNMENTS.canary-site"} {
				Expect(c.nc.Publish(subj, nil)).To(Succeed())
				Eventually(c.errs).Should(Receive(MatchError(ContainSubstring(`Permissions Violation for Publish to "` + subj + `"`))))
			}
		}

		// The orchestrator's request to web1 was seen by the watchers, so
		// anything web1 sent before it has been delivered too.
		Expect(o.nc.Publish(node1, []byte("canary-marker-e60"))).To(Succeed())
		Eventually(got1).Should(Receive(Equal("canary-marker-e60")))
		Consistently(stolen, time.Second).ShouldNot(Receive())
		var all []string
		for len(seen) > 0 {
			all = append(all, <-seen)
		}
		Expect(all).To(ContainElement(ContainSubstring("canary-marker-e60")), "the watchers saw the traffic")
		Expect(strings.Join(all, "\n")).NotTo(ContainSubstring("canary-web1-forged"), "nothing web1 forged may reach any broker's subscribers")
	})
})
