package continuous_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/continuous"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/sources"
	"github.com/ccm-fleet/ccm/trust/policy"
)

// fileManifest is a manifest managing one file with content, and an
// optional health check command.
func fileManifest(path, content, check string) string {
	doc := fmt.Sprintf("ccm:\n  resources:\n    - file:\n        - %q:\n            ensure: present\n            content: %q\n            owner: root\n            group: root\n            mode: \"0644\"\n", path, content)
	if check != "" {
		doc += fmt.Sprintf("            health_checks:\n              - name: probe\n                command: %q\n", check)
	}
	return doc
}

// counter sums the samples of metric name whose labels include want.
func counter(reg *prometheus.Registry, name string, want map[string]string) float64 {
	mfs, err := reg.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue next
				}
			}
			if c := m.GetCounter(); c != nil {
				total += c.GetValue()
			}
			if s := m.GetSummary(); s != nil {
				total += float64(s.GetSampleCount())
			}
		}
	}
	return total
}

type harness struct {
	dir     string
	reg     *prometheus.Registry
	audit   string
	js      jetstream.JetStream
	obs     jetstream.ObjectStore
	ops     nkeys.KeyPair
	stop    context.CancelFunc
	stopped chan error
	// facts are the agent's facts (default identity web1).
	facts map[string]any
	// registrar, when set, publishes registrations.
	registrar continuous.Registrar
	// logs, when set, also receives the agent's log.
	logs io.Writer
}

// start runs an agent with the configuration cfg (YAML), the policy and
// poll interval given, until the spec ends.
func (h *harness) start(cfg string, pol *policy.Policy, poll time.Duration) {
	c, err := continuous.ParseConfig([]byte(cfg))
	Expect(err).NotTo(HaveOccurred())
	c.CacheDir = filepath.Join(h.dir, "cache")
	h.reg = prometheus.NewRegistry()
	m, err := continuous.NewMetrics(h.reg)
	Expect(err).NotTo(HaveOccurred())
	types, err := providers.Builtin(providers.Options{})
	Expect(err).NotTo(HaveOccurred())
	h.audit = filepath.Join(h.dir, "audit.log")
	ag, err := continuous.New(continuous.Options{
		Config:  c,
		Applier: &continuous.LocalApplier{Engine: engine.New(types, engine.WithLogger(slog.New(slog.NewTextHandler(GinkgoWriter, nil))), engine.WithHealthRunner(providers.HealthRunner(runner.Exec{})))},
		Facts: func(context.Context) (map[string]any, error) {
			if h.facts != nil {
				return h.facts, nil
			}
			return map[string]any{"identity": "web1"}, nil
		},
		Registrar:    h.registrar,
		JS:           h.js,
		Policy:       pol,
		Auditor:      continuous.NewFileAuditor(h.audit),
		Metrics:      m,
		Identity:     "web1",
		PollInterval: poll,
		Log:          slog.New(slog.NewTextHandler(h.logWriter(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	h.stop, h.stopped = cancel, stopped
	go func() { stopped <- ag.Run(ctx) }()
	DeferCleanup(func() {
		cancel()
		select {
		case err := <-stopped:
			Expect(err).NotTo(HaveOccurred())
		case <-time.After(30 * time.Second):
			Fail("the agent did not stop within 30s")
		}
	})
}

// logWriter is where the agent logs: the spec's output, and logs when set.
func (h *harness) logWriter() io.Writer {
	if h.logs == nil {
		return GinkgoWriter
	}
	return io.MultiWriter(GinkgoWriter, h.logs)
}

// settled waits until target holds "managed\n" and a health-check-only
// run saw it OK after the apply that wrote it finished.
func (h *harness) settled(target string) {
	Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(20 * time.Second).Should(Equal([]byte("managed\n")))
	Eventually(func() float64 {
		return counter(h.reg, "choria_ccm_healthcheck_status_count", map[string]string{"status": "OK"})
	}).WithTimeout(20 * time.Second).Should(BeNumerically(">=", 2))
}

func (h *harness) auditLines() string {
	b, _ := os.ReadFile(h.audit)
	return string(b)
}

// bundleDir writes a bundle directory holding manifest.yaml = doc.
func (h *harness) bundleDir(doc string) string {
	dir, err := os.MkdirTemp(h.dir, "bundle")
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(doc), 0o644)).To(Succeed())
	return dir
}

// put stores a bundle of doc at key, signed by kp (nil: unsigned), made
// at created.
func (h *harness) put(key, doc string, kp nkeys.KeyPair, created time.Time) {
	data, err := sources.Pack(h.bundleDir(doc))
	Expect(err).NotTo(HaveOccurred())
	meta := jetstream.ObjectMeta{Name: key}
	if kp != nil {
		sig, err := sources.SignBundle(data, "obj://ccm-manifests/"+key, created, kp)
		Expect(err).NotTo(HaveOccurred())
		meta.Metadata = sig.Metadata()
	}
	_, err = h.obs.Put(context.Background(), meta, bytes.NewReader(data))
	Expect(err).NotTo(HaveOccurred())
}

func policyFrom(doc string) *policy.Policy {
	p, err := policy.ParsePolicy([]byte(doc))
	Expect(err).NotTo(HaveOccurred())
	return p
}

func policyTrusting(kp nkeys.KeyPair, allow ...string) *policy.Policy {
	pub, err := kp.PublicKey()
	Expect(err).NotTo(HaveOccurred())
	p, err := policy.ParsePolicy([]byte(fmt.Sprintf("signers:\n  - name: ops\n    public_key: %s\n    allow: [%s]\n", pub, strings.Join(allow, ", "))))
	Expect(err).NotTo(HaveOccurred())
	return p
}

var _ = Describe("Agent", func() {
	var h *harness

	BeforeEach(func() {
		h = &harness{dir: GinkgoT().TempDir()}
	})

	Describe("health checks", func() {
		It("remediates a CRITICAL health check with an apply of that manifest", func() {
			target := filepath.Join(h.dir, "critical.txt")
			mpath := filepath.Join(h.dir, "m.yaml")
			Expect(os.WriteFile(mpath, []byte(fileManifest(target, "managed\n", "/bin/sh -c 'test -f "+target+" || exit 2'")), 0o600)).To(Succeed())
			h.start(fmt.Sprintf("interval: 1h\nhealth_check_interval: 1s\nmanifests: [%s]\n", mpath), nil, 0)
			h.settled(target)
			Expect(os.Remove(target)).To(Succeed())
			Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(20 * time.Second).Should(Equal([]byte("managed\n")))
			Expect(counter(h.reg, "choria_ccm_agent_healthcheck_remediations_count", map[string]string{"manifest": mpath})).To(BeNumerically(">=", 1))
			Expect(counter(h.reg, "choria_ccm_healthcheck_status_count", map[string]string{"status": "CRITICAL", "check": "probe"})).To(BeNumerically(">=", 1))
		})

		It("does not remediate a WARNING health check", func() {
			target := filepath.Join(h.dir, "warning.txt")
			mpath := filepath.Join(h.dir, "m.yaml")
			Expect(os.WriteFile(mpath, []byte(fileManifest(target, "managed\n", "/bin/sh -c 'test -f "+target+" || exit 1'")), 0o600)).To(Succeed())
			h.start(fmt.Sprintf("interval: 1h\nhealth_check_interval: 1s\nmanifests: [%s]\n", mpath), nil, 0)
			h.settled(target)
			Expect(os.Remove(target)).To(Succeed())
			// Three WARNING results seen: three health runs happened after
			// the removal, and none of them applied.
			Eventually(func() float64 {
				return counter(h.reg, "choria_ccm_healthcheck_status_count", map[string]string{"status": "WARNING"})
			}).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 3))
			Expect(target).NotTo(BeAnExistingFile())
			Expect(counter(h.reg, "choria_ccm_agent_healthcheck_remediations_count", nil)).To(BeZero())
		})
	})

	Describe("https bundles", func() {
		It("applies a bundle pinned by its sha256 and refuses one whose bytes differ from the pin", func() {
			target := filepath.Join(h.dir, "web.conf")
			data, err := sources.Pack(h.bundleDir(fileManifest(target, "pinned\n", "")))
			Expect(err).NotTo(HaveOccurred())
			other, err := sources.Pack(h.bundleDir(fileManifest(target, "swapped-canary\n", "")))
			Expect(err).NotTo(HaveOccurred())
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/swapped/web.tar.gz" {
					_, _ = w.Write(other)
					return
				}
				_, _ = w.Write(data)
			}))
			DeferCleanup(srv.Close)
			pin := sources.Digest(data)
			h.start(fmt.Sprintf("interval: 1h\nmanifests:\n  - %s/good/web.tar.gz#sha256=%s\n  - %s/swapped/web.tar.gz#sha256=%s\n", srv.URL, pin, srv.URL, pin), nil, time.Hour)
			Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(20 * time.Second).Should(Equal([]byte("pinned\n")))
			Eventually(h.auditLines).Should(ContainSubstring("bundle checksum does not match its pin"))
			Expect(os.ReadFile(target)).To(Equal([]byte("pinned\n")))
		})
	})

	Describe("object store bundles", func() {
		BeforeEach(func() {
			b := brokertest.Start(GinkgoT())
			nc, err := nats.Connect(b.ClientURL())
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(nc.Close)
			h.js, err = jetstream.New(nc)
			Expect(err).NotTo(HaveOccurred())
			h.obs, err = h.js.CreateObjectStore(context.Background(), jetstream.ObjectStoreConfig{Bucket: "ccm-manifests"})
			Expect(err).NotTo(HaveOccurred())
			h.ops, err = nkeys.CreateUser()
			Expect(err).NotTo(HaveOccurred())
		})

		It("applies a signed bundle, and a new version within seconds of its put (the watch, not the poll)", func() {
			target := filepath.Join(h.dir, "app.conf")
			h.put("app.tar.gz", fileManifest(target, "v1\n", ""), h.ops, time.Now())
			h.start("interval: 1h\nmanifests: [obj://ccm-manifests/app.tar.gz]\n", policyTrusting(h.ops, "file"), time.Hour)
			Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(20 * time.Second).Should(Equal([]byte("v1\n")))
			Eventually(h.auditLines).Should(ContainSubstring(`"decision":"accepted"`))

			h.put("app.tar.gz", fileManifest(target, "v2\n", ""), h.ops, time.Now())
			Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(20 * time.Second).Should(Equal([]byte("v2\n")))
			Eventually(func() float64 {
				return counter(h.reg, "choria_ccm_agent_apply_duration_seconds", map[string]string{"manifest": "obj://ccm-manifests/app.tar.gz"})
			}).Should(BeNumerically(">=", 2))
		})

		It("never applies an unsigned bundle put by a raw client, and audits it", func() {
			target := filepath.Join(h.dir, "app.conf")
			h.put("app.tar.gz", fileManifest(target, "v1\n", ""), h.ops, time.Now())
			h.start("interval: 1h\nmanifests: [obj://ccm-manifests/app.tar.gz]\n", policyTrusting(h.ops, "file"), time.Hour)
			Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(20 * time.Second).Should(Equal([]byte("v1\n")))

			h.put("app.tar.gz", fileManifest(target, "unsigned-canary\n", ""), nil, time.Time{})
			Eventually(h.auditLines).WithTimeout(20 * time.Second).Should(And(ContainSubstring(`"decision":"unauthenticated"`), ContainSubstring("bundle is not signed")))
			Expect(os.ReadFile(target)).To(Equal([]byte("v1\n")))
			Expect(counter(h.reg, "choria_ccm_agent_bundle_refused_count", nil)).To(BeNumerically(">=", 1))
		})

		It("never applies a bundle signed by a key the policy does not trust", func() {
			target := filepath.Join(h.dir, "app.conf")
			stranger, _ := nkeys.CreateUser()
			h.put("app.tar.gz", fileManifest(target, "stranger-canary\n", ""), stranger, time.Now())
			h.start("interval: 1h\nmanifests: [obj://ccm-manifests/app.tar.gz]\n", policyTrusting(h.ops, "file"), time.Hour)
			Eventually(h.auditLines).WithTimeout(20 * time.Second).Should(ContainSubstring("is not trusted by this agent's policy"))
			Expect(target).NotTo(BeAnExistingFile())
		})

		It("refuses a resource the signer's policy does not allow, with the rule in the audit line", func() {
			target := filepath.Join(h.dir, "app.conf")
			h.put("app.tar.gz", fileManifest(target, "forbidden-canary\n", ""), h.ops, time.Now())
			h.start("interval: 1h\nmanifests: [obj://ccm-manifests/app.tar.gz]\n", policyTrusting(h.ops, "exec"), time.Hour)
			Eventually(h.auditLines).WithTimeout(20 * time.Second).Should(And(ContainSubstring(`"decision":"forbidden"`), ContainSubstring(`"rule":"allow [exec]"`)))
			Expect(target).NotTo(BeAnExistingFile())
		})

		It("refuses a replayed older bundle after a newer one was taken, also after a restart", func() {
			target := filepath.Join(h.dir, "app.conf")
			old := time.Now().Add(-time.Hour)
			h.put("app.tar.gz", fileManifest(target, "v2\n", ""), h.ops, time.Now())
			h.start("interval: 1h\nmanifests: [obj://ccm-manifests/app.tar.gz]\n", policyTrusting(h.ops, "file"), time.Hour)
			Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(20 * time.Second).Should(Equal([]byte("v2\n")))

			h.put("app.tar.gz", fileManifest(target, "replayed-canary\n", ""), h.ops, old)
			Eventually(h.auditLines).WithTimeout(20 * time.Second).Should(ContainSubstring(`"decision":"stale"`))
			Expect(os.ReadFile(target)).To(Equal([]byte("v2\n")))

			// A restarted agent (same cache directory) refuses it too.
			h.stop()
			Eventually(h.stopped).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
			h.stopped <- nil // for the first agent's cleanup
			Expect(os.Remove(h.audit)).To(Succeed())
			h.start("interval: 1h\nmanifests: [obj://ccm-manifests/app.tar.gz]\n", policyTrusting(h.ops, "file"), time.Hour)
			Eventually(h.auditLines).WithTimeout(20 * time.Second).Should(ContainSubstring(`"decision":"stale"`))
			Expect(os.ReadFile(target)).To(Equal([]byte("v2\n")))
		})

		It("takes the bundle it took before again after a restart, and refuses another bundle signed at the same instant", func() {
			target := filepath.Join(h.dir, "app.conf")
			signed := time.Now().Truncate(time.Millisecond)
			h.put("app.tar.gz", fileManifest(target, "v1\n", ""), h.ops, signed)
			h.start("interval: 1h\nmanifests: [obj://ccm-manifests/app.tar.gz]\n", policyTrusting(h.ops, "file"), time.Hour)
			Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(20 * time.Second).Should(Equal([]byte("v1\n")))

			// The host drifts while the agent is down; the restarted agent
			// (same cache directory) reads the same bundle and repairs it.
			h.stop()
			Eventually(h.stopped).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
			h.stopped <- nil // for the first agent's cleanup
			Expect(os.WriteFile(target, []byte("drifted\n"), 0o644)).To(Succeed())
			Expect(os.Remove(h.audit)).To(Succeed())
			h.start("interval: 1h\nmanifests: [obj://ccm-manifests/app.tar.gz]\n", policyTrusting(h.ops, "file"), time.Hour)
			Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(20 * time.Second).Should(Equal([]byte("v1\n")))
			Expect(h.auditLines()).ToNot(ContainSubstring(`"decision":"stale"`))

			// Another bundle claiming the same signing instant is not the
			// one taken: refused.
			h.put("app.tar.gz", fileManifest(target, "same-instant-canary\n", ""), h.ops, signed)
			Eventually(h.auditLines).WithTimeout(20 * time.Second).Should(ContainSubstring(`"decision":"stale"`))
			Expect(os.ReadFile(target)).To(Equal([]byte("v1\n")))
		})

		It("refuses a signed bundle stored under another name", func() {
			target := filepath.Join(h.dir, "app.conf")
			data, err := sources.Pack(h.bundleDir(fileManifest(target, "renamed-canary\n", "")))
			Expect(err).NotTo(HaveOccurred())
			sig, err := sources.SignBundle(data, "obj://ccm-manifests/db.tar.gz", time.Now(), h.ops)
			Expect(err).NotTo(HaveOccurred())
			_, err = h.obs.Put(context.Background(), jetstream.ObjectMeta{Name: "app.tar.gz", Metadata: sig.Metadata()}, bytes.NewReader(data))
			Expect(err).NotTo(HaveOccurred())
			h.start("interval: 1h\nmanifests: [obj://ccm-manifests/app.tar.gz]\n", policyTrusting(h.ops, "file"), time.Hour)
			Eventually(h.auditLines).WithTimeout(20 * time.Second).Should(ContainSubstring(`signed for \"obj://ccm-manifests/db.tar.gz\", fetched from \"obj://ccm-manifests/app.tar.gz\"`))
			Expect(target).NotTo(BeAnExistingFile())
		})
	})
})
