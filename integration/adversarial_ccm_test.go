package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/registration"
	"github.com/ccm-fleet/ccm/sources"
)

// webRegistration is a register_when_stable block (at the indentation of
// ccmFileManifest's properties) for service web.
func webRegistration(address string, annotations string) string {
	doc := "            register_when_stable:\n              - cluster: production\n                service: web\n                protocol: http\n                address: \"" + address + "\"\n                port: 80\n                priority: 10\n                ttl: 1m\n"
	if annotations != "" {
		doc += "                annotations:\n" + annotations
	}
	return doc
}

// peakOfChild is a python3 program that runs its arguments as a command,
// then prints the command's peak resident set ("peak_rss_kib=N") on
// stderr and exits with its status.
const peakOfChild = `import resource, subprocess, sys
rc = subprocess.call(sys.argv[1:])
print("peak_rss_kib=%d" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(rc)`

// childPeakKiB reads what peakOfChild printed.
func childPeakKiB(stderr string) int {
	GinkgoHelper()
	_, v, ok := strings.Cut(stderr, "peak_rss_kib=")
	Expect(ok).To(BeTrue(), "no peak_rss_kib line in %q", stderr)
	n, err := strconv.Atoi(strings.TrimSpace(v))
	Expect(err).NotTo(HaveOccurred())
	return n
}

// must returns v, failing the spec on err.
func must[T any](v T, err error) T {
	GinkgoHelper()
	Expect(err).NotTo(HaveOccurred())
	return v
}

// adminJS is a JetStream context of an unrestricted connection.
func adminJS(nc *nats.Conn) jetstream.JetStream {
	GinkgoHelper()
	js, err := jetstream.New(nc)
	Expect(err).NotTo(HaveOccurred())
	return js
}

var _ = Describe("Adversarial: CCM agent, bundles and registration", func() {
	var dir string

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
	})

	It("confines a CCM agent to its own registrations on a locked-down broker: it cannot publish under another host's key or a service its user is not narrowed to, put a bundle or purge; readers drop an entry another key signed", func() {
		const canary = "canary-forged-host-7731"
		ctx := context.Background()
		publisher := brokertest.NewUser(GinkgoT(), dir)
		web1, web2 := brokertest.NewUser(GinkgoT(), dir), brokertest.NewUser(GinkgoT(), dir)
		reg1, reg2 := newSigningKey(dir, "web1-registration"), newSigningKey(dir, "web2-registration")
		ops := newSigningKey(dir, "ops")

		example, err := os.ReadFile(filepath.Join("..", "dist", "broker-auth-ccm-agent.yaml"))
		Expect(err).NotTo(HaveOccurred())
		doc := strings.NewReplacer("PUBLISHER_NKEY", publisher.Public, "WEB1_NKEY", web1.Public, "WEB2_NKEY", web2.Public,
			"WEB1_REGISTRATION_KEY", reg1.pub, "WEB2_REGISTRATION_KEY", reg2.pub).Replace(string(example))
		doc += "  - user: admin\n    password: admin-pw\n"
		auth := filepath.Join(dir, "auth.yaml")
		Expect(os.WriteFile(auth, []byte(doc), 0o600)).To(Succeed())
		serverLog := gbytes.NewBuffer()
		b := brokertest.StartConfig(GinkgoT(), broker.Config{AuthFile: auth, ServerLog: true},
			broker.WithLogger(slog.New(slog.NewTextHandler(serverLog, &slog.HandlerOptions{Level: slog.LevelWarn}))))
		admin, err := nats.Connect(b.ClientURL(), nats.UserInfo("admin", "admin-pw"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(admin.Close)
		ajs := adminJS(admin)
		_, err = registration.EnsureStream(ctx, ajs, registration.DefaultStream, 1, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		_, err = sources.EnsureBundleStore(ctx, ajs, sources.DefaultBucket, 1)
		Expect(err).NotTo(HaveOccurred())
		_, err = jsstore.EnsureHistory(ctx, ajs, jsstore.HistoryConfig{})
		Expect(err).NotTo(HaveOccurred())

		publisherFlags := []string{"--server", b.ClientURL(), "--nkey", publisher.SeedFile, "--inbox-prefix", "_INBOX.publisher"}
		orch := func(args ...string) (int, string, string) { return runOrch(append(args, publisherFlags...)...) }

		// The publisher puts a signed bundle, which web1 reads and applies;
		// web1's local manifest registers web.
		bundle := filepath.Join(dir, "bundle")
		Expect(os.MkdirAll(bundle, 0o755)).To(Succeed())
		target := filepath.Join(dir, "site")
		Expect(os.WriteFile(filepath.Join(bundle, "manifest.yaml"), []byte(ccmFileManifest(target, "served\n", "")), 0o644)).To(Succeed())
		code, out, errOut := orch("manifest", "put", bundle, "obj://ccm-manifests/app.tar.gz", "--key", ops.seedFile)
		Expect(code).To(Equal(0), "stdout %s\nstderr %s", out, errOut)
		local := filepath.Join(dir, "web.yaml")
		Expect(os.WriteFile(local, []byte(ccmFileManifest(filepath.Join(dir, "local"), "local\n", "")+webRegistration("10.0.0.1", "")), 0o600)).To(Succeed())
		pol := policyFile(dir, signerEntry("ops", ops.pub, "file")) // the signers' manifests register nothing
		Expect(os.WriteFile(pol, append([]byte("registration:\n  services: [web]\n"), must(os.ReadFile(pol))...), 0o600)).To(Succeed())
		cfg := filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(cfg, fmt.Appendf(nil, "interval: 1h\nmanifests: [obj://ccm-manifests/app.tar.gz, %s]\nregistration: jetstream\ncache_dir: %s\n", local, filepath.Join(dir, "source")), 0o600)).To(Succeed())
		startProcess(ccmAgentBin(), "agent", "--config", cfg, "--policy", pol, "--identity", "web1", "--key", reg1.seedFile,
			"--server", b.ClientURL(), "--nkey", web1.SeedFile, "--inbox-prefix", "_INBOX.ccm-web1")
		Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(60 * time.Second).Should(Equal([]byte("served\n")))
		Eventually(func() string {
			_, out, _ := orch("registration", "query", "production", "http", "web", "--json")
			return out
		}).WithTimeout(30 * time.Second).Should(And(ContainSubstring(`"host": "web1"`), ContainSubstring(`"signer": "`+reg1.pub+`"`)))
		// web1's applies are in history, under its own identity.
		Eventually(func() []assignmentRun { return sourceRuns(ajs, "web1", local) }).WithTimeout(30 * time.Second).Should(ContainElement(HaveField("Trigger", "start")))

		// web1's own NATS user, with web1's own valid registration key.
		errs := make(chan error, 16)
		o, err := nats.NkeyOptionFromSeed(web1.SeedFile)
		Expect(err).NotTo(HaveOccurred())
		nc, err := nats.Connect(b.ClientURL(), o, nats.CustomInboxPrefix("_INBOX.ccm-web1"),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				select {
				case errs <- err:
				default:
				}
			}))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		js := adminJS(nc)
		signer1, err := protocol.NewKeySigner(reg1.kp)
		Expect(err).NotTo(HaveOccurred())

		// 1. An entry under web2's key: refused by the broker.
		forged := &registration.Entry{Cluster: "production", Service: "web", Protocol: "http", Address: "10.6.6.6", Port: 80, Priority: 1, TTL: "1h", Annotations: map[string]string{"note": canary}}
		msg, err := registration.NewMsg(forged, signer1)
		Expect(err).NotTo(HaveOccurred())
		msg.Subject = forged.PublisherSubject(reg2.pub)
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = js.PublishMsg(pctx, msg)
		cancel()
		Expect(err).To(HaveOccurred())
		Eventually(errs).WithTimeout(10 * time.Second).Should(Receive(MatchError(ContainSubstring("Permissions Violation for Publish to \"" + msg.Subject))))

		// 1b. An entry of another service (db) under web1's own key: the
		// shipped config narrows web1 to service web, so the broker refuses
		// it; web1's own web entry (step 0) went through.
		dbEntry := &registration.Entry{Cluster: "production", Service: "db", Protocol: "tcp", Address: "10.0.0.1", Port: 5432, Priority: 1, TTL: "1h", Annotations: map[string]string{"note": canary}}
		dbMsg, err := registration.NewMsg(dbEntry, signer1)
		Expect(err).NotTo(HaveOccurred())
		Expect(dbMsg.Subject).To(Equal(dbEntry.PublisherSubject(reg1.pub)))
		pctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		_, err = js.PublishMsg(pctx, dbMsg)
		cancel()
		Expect(err).To(HaveOccurred())
		Eventually(errs).WithTimeout(10 * time.Second).Should(Receive(MatchError(ContainSubstring("Permissions Violation for Publish to \"" + dbMsg.Subject))))
		dbRecs, _, err := registration.Query(ctx, ajs, registration.DefaultStream, &registration.Trust{JS: ajs, Stream: registration.DefaultStream}, "", "", "db", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(dbRecs).To(BeEmpty())

		// 2. A bundle put: refused; the stored bundle is the publisher's.
		obsAdmin, err := ajs.ObjectStore(ctx, sources.DefaultBucket)
		Expect(err).NotTo(HaveOccurred())
		before, err := obsAdmin.GetInfo(ctx, "app.tar.gz")
		Expect(err).NotTo(HaveOccurred())
		obs, err := js.ObjectStore(ctx, sources.DefaultBucket)
		Expect(err).NotTo(HaveOccurred(), "an agent reads the bundle store")
		pctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		_, err = obs.Put(pctx, jetstream.ObjectMeta{Name: "app.tar.gz"}, bytes.NewReader([]byte(canary)))
		cancel()
		Expect(err).To(HaveOccurred())
		after, err := obsAdmin.GetInfo(ctx, "app.tar.gz")
		Expect(err).NotTo(HaveOccurred())
		Expect(after.Digest).To(Equal(before.Digest))
		Expect(after.NUID).To(Equal(before.NUID))

		// 3. A purge of the registration stream (or of one endpoint): refused;
		// web1's entry is still there.
		own, err := js.Stream(ctx, registration.DefaultStream)
		Expect(err).NotTo(HaveOccurred(), "an agent reads the registration stream")
		pctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		err = own.Purge(pctx)
		cancel()
		Expect(err).To(HaveOccurred())
		recs, _, err := registration.Query(ctx, ajs, registration.DefaultStream, &registration.Trust{JS: ajs, Stream: registration.DefaultStream}, "", "", "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(recs).To(HaveLen(1))
		Expect(recs[0].Host).To(Equal("web1"))
		Expect(string(serverLog.Contents())).To(And(
			ContainSubstring(`Publish Violation - Subject \"`+msg.Subject),
			ContainSubstring(`Publish Violation - Subject \"`+dbMsg.Subject),
			ContainSubstring(`Publish Violation - Subject \"$O.ccm-manifests.`),
			ContainSubstring(`Publish Violation - Subject \"$JS.API.STREAM.PURGE.REGISTRATION`)))

		// 4. The same validly signed entry placed under web2's key by an
		// unrestricted client: readers drop it and say so.
		_, err = ajs.PublishMsg(ctx, msg)
		Expect(err).NotTo(HaveOccurred())
		code, out, errOut = orch("registration", "query", "production", "http", "web", "--json")
		Expect(code).To(Equal(0), errOut)
		Expect(out).NotTo(ContainSubstring(canary))
		Expect(out).NotTo(ContainSubstring("10.6.6.6"))
		Expect(errOut).To(ContainSubstring("warning: entry " + msg.Subject + " dropped: signed by " + reg1.pub + ", not by the host key " + reg2.pub))
	})

	It("refuses a CCM config file with a YAML alias bomb or a key given twice, quickly and in bounded memory, applying nothing", func() {
		const canary = "canary-config-bomb-5120"
		target := filepath.Join(dir, "applied")
		m := filepath.Join(dir, "m.yaml")
		Expect(os.WriteFile(m, []byte(ccmFileManifest(target, canary+"\n", "")), 0o600)).To(Succeed())
		var bomb strings.Builder
		bomb.WriteString("a0: &a0 [\"" + canary + "\", \"" + canary + "\", \"" + canary + "\", \"" + canary + "\", \"" + canary + "\", \"" + canary + "\", \"" + canary + "\", \"" + canary + "\", \"" + canary + "\"]\n")
		for i := 1; i <= 9; i++ {
			fmt.Fprintf(&bomb, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
		}
		fmt.Fprintf(&bomb, "interval: 1h\nmanifests: [%s]\ncache_dir: %s\n", m, filepath.Join(dir, "source"))
		dup := fmt.Sprintf("interval: 1h\nmanifests: [%s]\nmanifests: [%s]\ncache_dir: %s\n", m, m, filepath.Join(dir, "source"))
		for _, c := range []struct{ name, doc, want string }{
			{"bomb.yaml", bomb.String(), "a0: YAML anchors are not accepted (line 1)"},
			{"dup.yaml", dup, `key "manifests" appears twice (line 3)`},
		} {
			cfg := filepath.Join(dir, c.name)
			Expect(os.WriteFile(cfg, []byte(c.doc), 0o600)).To(Succeed())
			// The agent is started by a small python3 process, which reports
			// its child's peak memory: the test process's own rusage of a
			// child it started counts the test process's resident set at
			// the exec (the child shares its memory until then), gigabytes
			// late in the suite.
			s := startProcess("python3", "-c", peakOfChild, ccmAgentBin(), "agent", "--config", cfg)
			Eventually(s).WithTimeout(20 * time.Second).Should(gexec.Exit(1))
			Expect(string(s.Err.Contents())).To(ContainSubstring("config " + cfg + ": " + c.want))
			Expect(string(s.Out.Contents()) + string(s.Err.Contents())).NotTo(ContainSubstring(canary))
			Expect(childPeakKiB(string(s.Err.Contents()))).To(BeNumerically("<", 200<<10), "peak memory in KiB") // a few MB: nothing was expanded
			Expect(target).NotTo(BeAnExistingFile())
		}
	})

	It("never publishes a registration that reads sensitive data: not in the stream, the query output or the logs", func() {
		const canary = "canary-annotation-secret-9043"
		ctx := context.Background()
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		js := adminJS(nc)
		_, err = registration.EnsureStream(ctx, js, registration.DefaultStream, 1, time.Minute)
		Expect(err).NotTo(HaveOccurred())

		m := filepath.Join(dir, "web.yaml")
		doc := "data:\n  token: " + canary + "\nsensitive_data: [token]\n" +
			ccmFileManifest(filepath.Join(dir, "site"), "served\n", "") + webRegistration("10.0.0.1", "                  token: \"{{ lookup('data.token') }}\"\n") +
			"              - {cluster: production, service: api, protocol: http, address: 10.0.0.1, port: 8080, priority: 10, ttl: 1m}\n"
		Expect(os.WriteFile(m, []byte(doc), 0o600)).To(Succeed())
		cfg := filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(cfg, fmt.Appendf(nil, "interval: 1h\nlog_level: debug\nmanifests: [%s]\nregistration: jetstream\ncache_dir: %s\n", m, filepath.Join(dir, "source")), 0o600)).To(Succeed())
		agent := startProcess(ccmAgentBin(), "agent", "--config", cfg, "--identity", "web1", "--server", b.ClientURL())

		// The entry without a secret is published; the other is refused.
		Eventually(agent.Err).WithTimeout(60 * time.Second).Should(gbytes.Say("registration would publish sensitive data"))
		Eventually(func() []string {
			recs, _, err := registration.Query(ctx, js, registration.DefaultStream, &registration.Trust{JS: js, Stream: registration.DefaultStream}, "", "", "", "")
			Expect(err).NotTo(HaveOccurred())
			var out []string
			for _, r := range recs {
				out = append(out, r.Service)
			}
			return out
		}).WithTimeout(30 * time.Second).Should(Equal([]string{"api"}))
		code, out, errOut := runOrch("registration", "query", "--json", "--server", b.ClientURL())
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring(`"service": "api"`))
		// Every message the stream holds, raw.
		s, err := js.Stream(ctx, registration.DefaultStream)
		Expect(err).NotTo(HaveOccurred())
		info, err := s.Info(ctx)
		Expect(err).NotTo(HaveOccurred())
		var raw strings.Builder
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
			if msg, err := s.GetMsg(ctx, seq); err == nil {
				raw.Write(msg.Data)
				fmt.Fprint(&raw, msg.Header)
			}
		}
		Expect(raw.String()).To(ContainSubstring(`"service":"api"`))
		for where, text := range map[string]string{"stream": raw.String(), "query": out + errOut, "agent log": string(agent.Out.Contents()) + string(agent.Err.Contents())} {
			Expect(text).NotTo(ContainSubstring(canary), where)
		}
	})

	It("publishes registrations on core NATS with registration: nats, signed by the host's key at that key's subject", func() {
		const canary = "canary-core-nats-2210"
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		msgs := make(chan *nats.Msg, 64)
		sub, err := nc.ChanSubscribe(registration.SubjectPrefix+".>", msgs)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(sub.Unsubscribe)
		Expect(nc.Flush()).To(Succeed())

		key := newSigningKey(dir, "web1-registration")
		m := filepath.Join(dir, "web.yaml")
		Expect(os.WriteFile(m, []byte(ccmFileManifest(filepath.Join(dir, "site"), "served\n", "/bin/true")+webRegistration("10.0.0.1", "                  note: "+canary+"\n")), 0o600)).To(Succeed())
		cfg := filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(cfg, fmt.Appendf(nil, "interval: 1h\nhealth_check_interval: 1s\nmanifests: [%s]\nregistration: nats\ncache_dir: %s\n", m, filepath.Join(dir, "source")), 0o600)).To(Succeed())
		startProcess(ccmAgentBin(), "agent", "--config", cfg, "--identity", "web1", "--key", key.seedFile, "--server", b.ClientURL())

		var msg *nats.Msg
		Eventually(msgs).WithTimeout(60 * time.Second).Should(Receive(&msg))
		want := &registration.Entry{Cluster: "production", Service: "web", Protocol: "http", Address: "10.0.0.1", Port: 80}
		Expect(msg.Subject).To(Equal(want.PublisherSubject(key.pub)))
		Expect(msg.Header.Get(protocol.HeaderSigner)).To(Equal(key.pub))
		Expect(protocol.Verify(msg.Data, msg.Header.Get(protocol.HeaderSigner), msg.Header.Get(protocol.HeaderSignature))).To(Succeed())
		var got registration.Entry
		_, err = protocol.DecodeStrict(msg.Data, &got, protocol.Limits{MaxBytes: registration.MaxEntryBytes})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Host).To(Equal("web1"))
		Expect(got.Annotations).To(Equal(map[string]string{"note": canary}))
		Expect(got.TTL).To(Equal("1m"))
		// Published again at every health-check run.
		Eventually(msgs).WithTimeout(20 * time.Second).Should(Receive())
	})

	It("stays bounded through a burst of 1,000 signed bundle updates, ends on the last and never applies an older one after a newer", func() {
		const canary = "canary-burst-6087"
		ctx := context.Background()
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		obs, err := sources.EnsureBundleStore(ctx, adminJS(nc), sources.DefaultBucket, 1)
		Expect(err).NotTo(HaveOccurred())
		ops := newSigningKey(dir, "ops")
		pol := policyFile(dir, signerEntry("ops", ops.pub, "file"))
		target := filepath.Join(dir, "app.conf")
		bundle := filepath.Join(dir, "bundle")
		Expect(os.MkdirAll(bundle, 0o755)).To(Succeed())
		put := func(n int) {
			GinkgoHelper()
			Expect(os.WriteFile(filepath.Join(bundle, "manifest.yaml"), []byte(ccmFileManifest(target, fmt.Sprintf("%s v%d\n", canary, n), "")), 0o644)).To(Succeed())
			data, err := sources.Pack(bundle)
			Expect(err).NotTo(HaveOccurred())
			sig, err := sources.SignBundle(data, "obj://ccm-manifests/app.tar.gz", time.Now(), ops.kp)
			Expect(err).NotTo(HaveOccurred())
			_, err = obs.Put(ctx, jetstream.ObjectMeta{Name: "app.tar.gz", Metadata: sig.Metadata()}, bytes.NewReader(data))
			Expect(err).NotTo(HaveOccurred())
		}
		version := func() int {
			b, err := os.ReadFile(target)
			if err != nil {
				return -1
			}
			var n int
			if _, err := fmt.Sscanf(strings.TrimPrefix(string(b), canary+" "), "v%d", &n); err != nil {
				return -2
			}
			return n
		}
		put(0)
		cfg := filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(cfg, fmt.Appendf(nil, "interval: 1h\nmanifests: [obj://ccm-manifests/app.tar.gz]\ncache_dir: %s\n", filepath.Join(dir, "source")), 0o600)).To(Succeed())
		agent := startProcess(ccmAgentBin(), "agent", "--config", cfg, "--policy", pol, "--audit-log", filepath.Join(dir, "audit.log"), "--server", b.ClientURL())
		Eventually(version).WithTimeout(60 * time.Second).Should(Equal(0))
		status := func(field string) int {
			GinkgoHelper()
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", agent.Command.Process.Pid))
			Expect(err).NotTo(HaveOccurred())
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, field+":"); ok {
					var n int
					_, err := fmt.Sscanf(strings.TrimSpace(v), "%d", &n)
					Expect(err).NotTo(HaveOccurred())
					return n
				}
			}
			Fail("no " + field + " in /proc status")
			return 0
		}
		threadsBefore := status("Threads")

		// Watch the file during the burst: a version seen must never be
		// older than one seen before it.
		seen := make(chan int, 4096)
		wctx, stop := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			last := 0
			for wctx.Err() == nil {
				if v := version(); v >= 0 && v != last {
					last = v
					select {
					case seen <- v:
					default:
					}
				}
				select {
				case <-wctx.Done():
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		DeferCleanup(func() { stop(); <-watched })
		for n := 1; n <= 1000; n++ {
			put(n)
		}
		Eventually(version).WithTimeout(120 * time.Second).Should(Equal(1000))
		Consistently(version).WithTimeout(5 * time.Second).Should(Equal(1000))
		stop()
		<-watched
		close(seen)
		prev := 0
		for v := range seen {
			Expect(v).To(BeNumerically(">", prev), "version %d applied after %d", v, prev)
			prev = v
		}
		Expect(status("VmHWM")).To(BeNumerically("<", 300<<10), "peak memory in KiB")
		Expect(status("Threads")).To(BeNumerically("<=", threadsBefore+16))
		Expect(agent.ExitCode()).To(Equal(-1), "still running")
	})

	It("applies no part of a bundle when the broker dies during its fetch, and applies it whole once the broker is back", func() {
		const canary = "canary-broker-kill-3391"
		ctx := context.Background()
		cfgB := broker.Config{Listen: freeAddr(), StoreDir: filepath.Join(dir, "store")}
		b := brokertest.StartConfig(GinkgoT(), cfgB)
		nc, err := nats.Connect(b.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		_, err = sources.EnsureBundleStore(ctx, adminJS(nc), sources.DefaultBucket, 1)
		Expect(err).NotTo(HaveOccurred())
		ops := newSigningKey(dir, "ops")
		pol := policyFile(dir, signerEntry("ops", ops.pub, "file"))
		target, big := filepath.Join(dir, "app.conf"), filepath.Join(dir, "big.dat")
		bundle := filepath.Join(dir, "bundle")
		Expect(os.MkdirAll(bundle, 0o755)).To(Succeed())
		// v2 carries a large file (many object chunks) copied from the
		// bundle, so its fetch takes a while: random bytes, as the bundle
		// is compressed.
		large := append([]byte(canary+"\n"), make([]byte, 8<<20)...)
		_, _ = rand.NewChaCha8([32]byte{33, 91}).Read(large[len(canary)+1:])
		put := func(n int, withBig bool) {
			GinkgoHelper()
			doc := ccmFileManifest(target, fmt.Sprintf("v%d\n", n), "")
			if withBig {
				Expect(os.WriteFile(filepath.Join(bundle, "files", "big.dat"), large, 0o644)).To(Succeed())
				doc += fmt.Sprintf("        - %q:\n            ensure: present\n            source: files/big.dat\n            owner: root\n            group: root\n            mode: \"0644\"\n", big)
			}
			Expect(os.WriteFile(filepath.Join(bundle, "manifest.yaml"), []byte(doc), 0o644)).To(Succeed())
			data, err := sources.Pack(bundle)
			Expect(err).NotTo(HaveOccurred())
			sig, err := sources.SignBundle(data, "obj://ccm-manifests/app.tar.gz", time.Now(), ops.kp)
			Expect(err).NotTo(HaveOccurred())
			obs, err := adminJS(nc).ObjectStore(ctx, sources.DefaultBucket)
			Expect(err).NotTo(HaveOccurred())
			_, err = obs.Put(ctx, jetstream.ObjectMeta{Name: "app.tar.gz", Metadata: sig.Metadata()}, bytes.NewReader(data))
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(os.MkdirAll(filepath.Join(bundle, "files"), 0o755)).To(Succeed())
		put(1, false)
		cfg := filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(cfg, fmt.Appendf(nil, "interval: 1h\nmanifests: [obj://ccm-manifests/app.tar.gz]\ncache_dir: %s\n", filepath.Join(dir, "source")), 0o600)).To(Succeed())
		// The agent reaches the broker over a link that passes 1 MiB/s, so
		// fetching v2 takes seconds and the broker dies while it is under
		// way, not before it starts or after it ends.
		link := startSlowLink(cfgB.Listen, 1<<20)
		agent := startProcess(ccmAgentBin(), "agent", "--config", cfg, "--policy", pol, "--server", link.URL())
		Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(60 * time.Second).Should(Equal([]byte("v1\n")))

		// v2 is stored; the agent is told and starts fetching; the broker
		// goes away when a quarter of v2 has reached the agent.
		before := link.down.Load()
		put(2, true)
		Eventually(func() int64 { return link.down.Load() - before }).WithTimeout(60*time.Second).Should(BeNumerically(">=", 2<<20), "bytes of v2 fetched")
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		Expect(b.Shutdown(sctx)).To(Succeed())
		cancel()
		Expect(link.down.Load()-before).To(BeNumerically("<", 6<<20), "the fetch was still under way when the broker died")
		// Down: nothing of v2 is applied.
		Consistently(func() string {
			t, _ := os.ReadFile(target)
			_, err := os.Stat(big)
			if string(t) == "v1\n" && os.IsNotExist(err) {
				return "v1"
			}
			return fmt.Sprintf("changed: target %q, big.dat: %v", t, err)
		}).WithTimeout(5 * time.Second).Should(Equal("v1"))
		Expect(agent.ExitCode()).To(Equal(-1), "the agent keeps running while the broker is down")

		brokertest.StartConfig(GinkgoT(), cfgB)
		Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(90 * time.Second).Should(Equal([]byte("v2\n")))
		Eventually(func() bool { bb, _ := os.ReadFile(big); return bytes.Equal(bb, large) }).WithTimeout(30 * time.Second).Should(BeTrue())
	})
})
