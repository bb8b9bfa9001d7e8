package integration_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/natsconn"
)

var (
	agentBinOnce sync.Once
	agentBin     string
)

// ccmAgentBin builds ccm-agent once for the suite (the suite's cleanup
// removes it with the other build artefacts).
func ccmAgentBin() string {
	agentBinOnce.Do(func() {
		p, err := gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-agent")
		Expect(err).ToNot(HaveOccurred())
		agentBin = p
	})
	return agentBin
}

// startProcess starts a binary and stops it when the spec ends.
func startProcess(bin string, args ...string) *gexec.Session {
	GinkgoHelper()
	s, err := gexec.Start(exec.Command(bin, args...), GinkgoWriter, GinkgoWriter)
	Expect(err).ToNot(HaveOccurred())
	DeferCleanup(func() { s.Interrupt().Wait(30 * time.Second); s.Kill().Wait(10 * time.Second) })
	return s
}

// runOrch runs ccm-orch with args and returns its exit code and output.
func runOrch(args ...string) (int, string, string) {
	GinkgoHelper()
	s := startProcess(orchBin, args...)
	Eventually(s).WithTimeout(60 * time.Second).Should(gexec.Exit())
	return s.ExitCode(), string(s.Out.Contents()), string(s.Err.Contents())
}

// lockedHost is an agent of the locked-down broker: its identity, the
// subject token of the identity, and its nkey.
type lockedHost struct {
	identity, token, inbox, role string
	user                         brokertest.User
}

var _ = Describe("A locked-down broker", func() {
	var (
		dir        string
		b          *broker.Broker
		serverLog  *gbytes.Buffer
		orch       brokertest.User
		admin      *nats.Conn
		web1, web2 lockedHost
		// ops signs the requests; the agents' policy trusts it for files
		ops    signingKey
		policy string
	)

	// violations are the permission violations nats-server logged.
	violations := func() []string {
		var out []string
		for l := range strings.SplitSeq(string(serverLog.Contents()), "\n") {
			if strings.Contains(l, "Publish Violation") || strings.Contains(l, "Subscription Violation") {
				out = append(out, l)
			}
		}
		return out
	}
	// connectAs connects as a host's user with its inbox prefix; errs
	// receives the connection's asynchronous errors.
	connectAs := func(u brokertest.User, inbox string) (*nats.Conn, chan error) {
		GinkgoHelper()
		errs := make(chan error, 16)
		nc, err := nats.Connect(b.ClientURL(), nats.CustomInboxPrefix(inbox), nats.PermissionErrOnSubscribe(true),
			func() nats.Option {
				o, err := nats.NkeyOptionFromSeed(u.SeedFile)
				Expect(err).ToNot(HaveOccurred())
				return o
			}(),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				select {
				case errs <- err:
				default:
				}
			}))
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		return nc, errs
	}
	orchFlags := func() []string {
		return []string{"--server", b.ClientURL(), "--nkey", orch.SeedFile, "--inbox-prefix", "_INBOX.orch"}
	}
	startAgent := func(h lockedHost) *gexec.Session {
		GinkgoHelper()
		args := []string{"run", "--identity", h.identity, "--fact", "role=" + h.role, "--fact", "os=debian", "--fact", "platform=debian",
			"--state-dir", filepath.Join(dir, h.identity), "--heartbeat", "1s",
			"--server", b.ClientURL(), "--nkey", h.user.SeedFile, "--inbox-prefix", h.inbox, "--policy", policy}
		return startProcess(ccmAgentBin(), args...)
	}

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		orch = brokertest.NewUser(GinkgoT(), dir)
		ops = newSigningKey(dir, "ops")
		policy = policyFile(dir, signerEntry("ops", ops.pub, "file"))
		web1 = lockedHost{identity: "web1.example.com", token: "web1%2Eexample%2Ecom", inbox: "_INBOX.agent-web1", role: "web", user: brokertest.NewUser(GinkgoT(), dir)}
		web2 = lockedHost{identity: "web2.example.com", token: "web2%2Eexample%2Ecom", inbox: "_INBOX.agent-web2", role: "db", user: brokertest.NewUser(GinkgoT(), dir)}

		// The shipped example, with this spec's keys and an admin user
		// that may do anything (to watch subjects).
		example, err := os.ReadFile(filepath.Join("..", "dist", "broker-auth.yaml"))
		Expect(err).ToNot(HaveOccurred())
		doc := strings.NewReplacer("ORCHESTRATOR_NKEY", orch.Public, "WEB1_NKEY", web1.user.Public, "WEB2_NKEY", web2.user.Public).Replace(string(example))
		doc += "  - user: admin\n    password: admin-pw\n"
		auth := filepath.Join(dir, "auth.yaml")
		Expect(os.WriteFile(auth, []byte(doc), 0o600)).To(Succeed())

		serverLog = gbytes.NewBuffer()
		b = brokertest.StartConfig(GinkgoT(), broker.Config{AuthFile: auth, ServerLog: true},
			broker.WithLogger(slog.New(slog.NewTextHandler(serverLog, &slog.HandlerOptions{Level: slog.LevelWarn}))))

		nc, err := b.InProcessConn()
		Expect(err).ToNot(HaveOccurred())
		defer nc.Close()
		js, err := jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = jsstore.EnsureHistory(ctx, js, jsstore.HistoryConfig{})
		Expect(err).ToNot(HaveOccurred())
		_, err = jsstore.EnsureRegistry(ctx, js, jsstore.RegistryConfig{})
		Expect(err).ToNot(HaveOccurred())
		// The agents follow the assignment store (its republished
		// changes and direct gets) under their locked-down users.
		_, err = jsstore.EnsureAssignments(ctx, js, jsstore.AssignmentsConfig{})
		Expect(err).ToNot(HaveOccurred())

		admin, err = nats.Connect(b.ClientURL(), nats.UserInfo("admin", "admin-pw"))
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(admin.Close)
	})

	It("lets each agent serve its own requests end to end and nothing else", func() {
		startAgent(web1)
		startAgent(web2)
		Eventually(func() string {
			_, out, _ := runOrch(append([]string{"discover", "--where", "os=debian"}, orchFlags()...)...)
			return out
		}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(And(ContainSubstring(web1.identity), ContainSubstring(web2.identity)))

		target := filepath.Join(dir, "motd")
		code, out, errOut := runOrch(append([]string{"ensure", "file", target, "--content", "locked down\n", "--owner", "root", "--group", "root", "--mode", "0644", "--host", web1.identity, "--key", ops.seedFile}, orchFlags()...)...)
		Expect(code).To(Equal(0), "stdout %s\nstderr %s", out, errOut)
		Expect(out).ToNot(ContainSubstring("unverified"), "the orchestrator reads the host's key from the registry")
		Expect(os.ReadFile(target)).To(Equal([]byte("locked down\n")))
		code, out, errOut = runOrch(append([]string{"ensure", "file", target + ".db", "--content", "db\n", "--owner", "root", "--group", "root", "--mode", "0644", "--where", "role=db", "--key", ops.seedFile}, orchFlags()...)...)
		Expect(code).To(Equal(0), "stdout %s\nstderr %s", out, errOut)
		Expect(out).To(ContainSubstring("1 host"))
		id := regexp.MustCompile(`\(request (\w+),`).FindStringSubmatch(out)
		Expect(id).To(HaveLen(2), out)
		code, out, errOut = runOrch(append([]string{"history", "list", "--since", "1h"}, orchFlags()...)...)
		Expect(code).To(Equal(0), "stdout %s\nstderr %s", out, errOut)
		Expect(out).To(ContainSubstring("motd"))
		Eventually(func() string {
			_, out, _ := runOrch(append([]string{"history", "show", id[1]}, orchFlags()...)...)
			return out
		}).WithTimeout(30 * time.Second).Should(ContainSubstring(web2.identity))
		code, out, errOut = runOrch(append([]string{"history", "host", web1.identity, "--since", "1h"}, orchFlags()...)...)
		Expect(code).To(Equal(0), "stdout %s\nstderr %s", out, errOut)
		Expect(out).To(ContainSubstring("motd"))
		code, out, errOut = runOrch(append([]string{"discover", "--discovery", "broadcast", "--where", "role=web"}, orchFlags()...)...)
		Expect(code).To(Equal(0), "stdout %s\nstderr %s", out, errOut)
		Expect(out).To(And(ContainSubstring(web1.identity), Not(ContainSubstring(web2.identity))))
		// Both agents wrote their history records under their own users.
		js, err := jetstream.New(admin)
		Expect(err).ToNot(HaveOccurred())
		for _, h := range []lockedHost{web1, web2} {
			Eventually(func() (uint64, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				s, err := js.Stream(ctx, "CCM_HISTORY")
				if err != nil {
					return 0, err
				}
				info, err := s.Info(ctx, jetstream.WithSubjectFilter("ccm.v1.history.*."+h.token))
				if err != nil {
					return 0, err
				}
				return info.State.Msgs, nil
			}).WithTimeout(30*time.Second).Should(BeNumerically(">=", 1), h.identity)
		}
		Expect(violations()).To(BeEmpty(), "the permissions of the example are enough for the fleet")

		// web1 tries to listen to web2's requests, and to send it one.
		nc, errs := connectAs(web1.user, web1.inbox)
		sub, err := nc.SubscribeSync("ccm.v1.req.node." + web2.token)
		Expect(err).ToNot(HaveOccurred())
		_, err = sub.NextMsg(30 * time.Second)
		Expect(err).To(MatchError(nats.ErrPermissionViolation))
		Expect(err.Error()).To(ContainSubstring("ccm.v1.req.node." + web2.token))

		spy, err := admin.SubscribeSync("ccm.v1.req.node." + web2.token)
		Expect(err).ToNot(HaveOccurred())
		Expect(admin.Flush()).To(Succeed())
		Expect(nc.Publish("ccm.v1.req.node."+web2.token, []byte("canary"))).To(Succeed())
		Eventually(errs).WithTimeout(30 * time.Second).Should(Receive(MatchError(ContainSubstring(`Permissions Violation for Publish to "ccm.v1.req.node.` + web2.token + `"`))))
		Expect(admin.Publish("ccm.v1.req.node."+web2.token, []byte("marker"))).To(Succeed())
		m, err := spy.NextMsg(30 * time.Second)
		Expect(err).ToNot(HaveOccurred())
		Expect(string(m.Data)).To(Equal("marker"), "web1's message never reached web2's subject")

		// nor write web2's history or registry entry, nor read other inboxes.
		// nor forge a change of the assignment store (only the stream
		// republishes there), nor hold a consumer on it.
		for _, subject := range []string{"ccm.v1.history.x." + web2.token, "$KV.CCM_NODES." + web2.identity, "$JS.API.STREAM.DELETE.CCM_HISTORY",
			"ccm.v1.assignments.motd", "$KV.CCM_ASSIGNMENTS.motd", "$JS.API.CONSUMER.CREATE.KV_CCM_ASSIGNMENTS.x"} {
			Expect(nc.Publish(subject, []byte("{}"))).To(Succeed())
			Eventually(errs).WithTimeout(30 * time.Second).Should(Receive(MatchError(ContainSubstring(`Publish to "` + subject + `"`))))
		}
		for _, subject := range []string{"_INBOX.orch.>", "_INBOX.>", "ccm.v1.req.>"} {
			sub, err := nc.SubscribeSync(subject)
			Expect(err).ToNot(HaveOccurred())
			_, err = sub.NextMsg(30 * time.Second)
			Expect(err).To(MatchError(nats.ErrPermissionViolation), subject)
		}
		Expect(violations()).To(ContainElement(ContainSubstring(`Publish Violation - Subject \"ccm.v1.req.node.`+web2.token+`\"`)), "the server logged what it refused")
	})

	It("does not let the orchestrator subscribe to request subjects", func() {
		nc, _ := connectAs(orch, "_INBOX.orch")
		for _, subject := range []string{"ccm.v1.req.all", "ccm.v1.req.node." + web1.token, "ccm.v1.req.>", ">", "_INBOX.agent-web1.>"} {
			sub, err := nc.SubscribeSync(subject)
			Expect(err).ToNot(HaveOccurred())
			_, err = sub.NextMsg(30 * time.Second)
			Expect(err).To(MatchError(nats.ErrPermissionViolation), subject)
		}
	})

	It("cuts off a user removed from the auth file on SIGHUP of ccm-orch broker, keeping the others", func() {
		// The real command this time, with the spec's auth file.
		auth := filepath.Join(dir, "auth.yaml")
		listen := freeAddr()
		brk := startProcess(orchBin, "broker", "--listen", listen, "--store", filepath.Join(dir, "store"), "--auth-file", auth)
		Eventually(brk.Out).WithTimeout(60 * time.Second).Should(gbytes.Say("broker listening on"))
		url := "nats://" + listen

		closed := make(chan struct{})
		o1, err := nats.NkeyOptionFromSeed(web1.user.SeedFile)
		Expect(err).ToNot(HaveOccurred())
		w1, err := nats.Connect(url, o1, nats.CustomInboxPrefix(web1.inbox), nats.ReconnectWait(20*time.Millisecond), nats.MaxReconnects(-1),
			nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(w1.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		DeferCleanup(cancel)
		w2, err := natsconn.Connect(ctx, natsconn.Options{Servers: url, NKey: web2.user.SeedFile, InboxPrefix: web2.inbox})
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(w2.Close)

		doc, err := os.ReadFile(auth)
		Expect(err).ToNot(HaveOccurred())
		without := strings.Replace(string(doc), "nkey: "+web1.user.Public, "nkey: "+brokertest.NewUser(GinkgoT(), dir).Public, 1)
		Expect(os.WriteFile(auth, []byte(without), 0o600)).To(Succeed())
		brk.Signal(syscall.SIGHUP)
		Eventually(brk.Err).WithTimeout(30 * time.Second).Should(gbytes.Say("broker reloaded"))

		Eventually(closed).WithTimeout(30*time.Second).Should(BeClosed(), "web1's reconnects are refused until it gives up")
		_, err = natsconn.Connect(ctx, natsconn.Options{Servers: url, NKey: web1.user.SeedFile})
		Expect(err).To(MatchError(ContainSubstring("Authorization Violation")))
		Expect(w2.IsConnected()).To(BeTrue())
		Expect(w2.Stats().Reconnects).To(BeZero())
		Expect(w2.Flush()).To(Succeed())

		// A broken file on reload keeps the users in force.
		Expect(os.WriteFile(auth, []byte("users: [{user: x}]\n"), 0o600)).To(Succeed())
		brk.Signal(syscall.SIGHUP)
		Eventually(brk.Err).WithTimeout(30 * time.Second).Should(gbytes.Say("broker reload failed, the previous settings stay in force: .*password is required"))
		Expect(w2.Flush()).To(Succeed())
		again, err := natsconn.Connect(ctx, natsconn.Options{Servers: url, NKey: web2.user.SeedFile, InboxPrefix: web2.inbox})
		Expect(err).ToNot(HaveOccurred())
		again.Close()
	})
})

var _ = Describe("A TLS broker", func() {
	var (
		dir string
		pki brokertest.PKI
	)
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		pki = brokertest.WritePKI(GinkgoT(), dir)
	})

	It("refuses plaintext clients with a clear error", func() {
		b := brokertest.StartConfig(GinkgoT(), broker.Config{TLS: broker.TLSConfig{Cert: pki.ServerCert, Key: pki.ServerKey}})
		plain := "nats://" + strings.TrimPrefix(b.ClientURL(), "tls://")
		code, _, errOut := runOrch("discover", "--server", plain)
		Expect(code).To(Equal(1))
		Expect(errOut).To(And(ContainSubstring("cannot connect to NATS"), ContainSubstring("certificate signed by unknown authority")))
		Expect(errOut).To(ContainSubstring("(URL from --server); the server's certificate did not verify: give the CA that signed it with --tlsca"))
		Expect(errOut).ToNot(ContainSubstring("is a NATS server running"), "the server answered: the hint is about its certificate")
		code, _, errOut = runOrch("discover", "--server", b.ClientURL(), "--tlsca", pki.CA)
		Expect(code).To(Equal(4), errOut) // connected: no host matched
	})

	It("with --tls-verify on ccm-orch broker, refuses clients without a certificate from the CA", func() {
		listen := freeAddr()
		brk := startProcess(orchBin, "broker", "--listen", listen, "--store", filepath.Join(dir, "store"),
			"--tlscert", pki.ServerCert, "--tlskey", pki.ServerKey, "--tlsca", pki.CA, "--tls-verify")
		Eventually(brk.Out).WithTimeout(60 * time.Second).Should(gbytes.Say("broker listening on tls://"))
		url := "tls://" + listen

		code, _, errOut := runOrch("discover", "--server", url, "--tlsca", pki.CA)
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("cannot connect to NATS"))

		other := brokertest.WritePKI(GinkgoT(), GinkgoT().TempDir())
		code, _, errOut = runOrch("discover", "--server", url, "--tlsca", pki.CA, "--tlscert", other.ClientCert, "--tlskey", other.ClientKey)
		Expect(code).To(Equal(1), "a certificate from another CA")
		Expect(errOut).To(ContainSubstring("cannot connect to NATS"))

		Eventually(func() int {
			code, _, _ := runOrch("discover", "--server", url, "--tlsca", pki.CA, "--tlscert", pki.ClientCert, "--tlskey", pki.ClientKey)
			return code
		}).WithTimeout(60*time.Second).WithPolling(500*time.Millisecond).Should(Equal(4), "connected: no host matched")
	})
})

// freeAddr returns a 127.0.0.1 address with a port that was free a moment ago.
func freeAddr() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).ToNot(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}

var _ = Describe("dist/nats-server-auth.conf", func() {
	It("grants the same permissions as dist/broker-auth.yaml, and nats-server accepts it", func() {
		dir := GinkgoT().TempDir()
		keys := map[string]string{}
		var pairs []string
		for _, p := range []string{"ORCHESTRATOR_NKEY", "WEB1_NKEY", "WEB2_NKEY"} {
			keys[p] = brokertest.NewUser(GinkgoT(), dir).Public
			pairs = append(pairs, p, keys[p])
		}
		fill := strings.NewReplacer(pairs...)
		read := func(name string) string {
			b, err := os.ReadFile(filepath.Join("..", "dist", name))
			Expect(err).ToNot(HaveOccurred())
			return fill.Replace(string(b))
		}
		fromYAML, err := broker.ParseAuthFile([]byte(read("broker-auth.yaml")))
		Expect(err).ToNot(HaveOccurred())
		conf := filepath.Join(dir, "auth.conf")
		Expect(os.WriteFile(conf, []byte(read("nats-server-auth.conf")), 0o600)).To(Succeed())
		opts, err := server.ProcessConfigFile(conf)
		Expect(err).ToNot(HaveOccurred())

		Expect(opts.Nkeys).To(HaveLen(len(fromYAML.Users)))
		byKey := map[string]*server.NkeyUser{}
		for _, u := range opts.Nkeys {
			byKey[u.Nkey] = u
		}
		for _, u := range fromYAML.Users {
			c := byKey[u.NKey]
			Expect(c).ToNot(BeNil(), u.NKey)
			Expect(c.Permissions.Publish.Allow).To(Equal(u.Permissions.Publish.Allow), u.NKey)
			Expect(c.Permissions.Subscribe.Allow).To(Equal(u.Permissions.Subscribe.Allow), u.NKey)
			Expect(c.Permissions.Response != nil).To(Equal(u.Permissions.AllowResponses != nil && u.Permissions.AllowResponses.Enabled), u.NKey)
		}
	})
})
