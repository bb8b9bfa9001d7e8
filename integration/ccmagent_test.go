package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/sources"
)

// ccmFileManifest manages one file, with an optional health check.
func ccmFileManifest(path, content, check string) string {
	doc := fmt.Sprintf("ccm:\n  resources:\n    - file:\n        - %q:\n            ensure: present\n            content: %q\n            owner: root\n            group: root\n            mode: \"0644\"\n", path, content)
	if check != "" {
		doc += fmt.Sprintf("            health_checks:\n              - name: probe\n                command: %q\n", check)
	}
	return doc
}

// ccmLBManifest renders a load balancer's upstreams (%q: the file) from
// the web registrations.
const ccmLBManifest = `ccm:
  resources:
    - file:
        - %q:
            ensure: present
            owner: root
            group: root
            mode: "0644"
            content: |-
              {{ join(map(registrations('production', 'http', 'web', '*'), 'server ' + .Address + ':' + string(.Port)), "\n") }}
`

// freePort is a TCP port free on 127.0.0.1 a moment ago.
func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// scrape returns the agent's metrics page.
func scrape(port int) string {
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// metricSum adds the values of every sample line of name matching
// labelsRe.
func metricSum(page, name, labelsRe string) float64 {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{[^}]*` + labelsRe + `[^}]*\} ([0-9.e+]+)$`)
	total := 0.0
	for _, m := range re.FindAllStringSubmatch(page, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		total += v
	}
	return total
}

var _ = Describe("CCM agent (ccm-agent agent)", func() {
	var dir string

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
	})

	It("applies an obj:// manifest from a CCM configuration, a new version within seconds of manifest put, never an unsigned bundle put by a raw client", func() {
		b := brokertest.Start(GinkgoT())
		url := b.ClientURL()
		orch := func(args ...string) string {
			GinkgoHelper()
			s := startProcess(orchBin, append(args, "--server", url)...)
			Eventually(s).WithTimeout(60 * time.Second).Should(gexec.Exit(0))
			return string(s.Out.Contents())
		}
		Expect(orch("history", "init")).To(ContainSubstring("manifest bundles ccm-manifests: 1 replica"))

		kp, err := nkeys.CreateUser()
		Expect(err).NotTo(HaveOccurred())
		seed, _ := kp.Seed()
		pub, _ := kp.PublicKey()
		seedPath := filepath.Join(dir, "ops.seed")
		Expect(os.WriteFile(seedPath, seed, 0o600)).To(Succeed())
		polPath := filepath.Join(dir, "policy.yaml")
		Expect(os.WriteFile(polPath, fmt.Appendf(nil, "signers:\n  - name: ops\n    public_key: %s\n    allow: [file]\n", pub), 0o600)).To(Succeed())

		target := filepath.Join(dir, "app.conf")
		bundle := filepath.Join(dir, "bundle")
		Expect(os.MkdirAll(bundle, 0o755)).To(Succeed())
		put := func(content string) {
			Expect(os.WriteFile(filepath.Join(bundle, "manifest.yaml"), []byte(ccmFileManifest(target, content, "")), 0o644)).To(Succeed())
			Expect(orch("manifest", "put", bundle, "obj://ccm-manifests/app.tar.gz", "--key", seedPath)).To(ContainSubstring("stored obj://ccm-manifests/app.tar.gz"))
		}
		put("v1\n")

		port := freePort()
		cfgPath := filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(cfgPath, fmt.Appendf(nil, "interval: 5m\nmanifests:\n  - obj://ccm-manifests/app.tar.gz\nlog_level: debug\ncache_dir: %s\nmonitor_port: %d\n", filepath.Join(dir, "source"), port), 0o600)).To(Succeed())
		audit := filepath.Join(dir, "audit.log")
		startProcess(ccmAgentBin(), "agent", "--config", cfgPath, "--policy", polPath, "--audit-log", audit, "--server", url, "--monitor-host", "127.0.0.1")
		Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(30 * time.Second).Should(Equal([]byte("v1\n")))

		// The poll is every 30s: a change seen within 15s came through the
		// object store watch.
		put("v2\n")
		Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(15 * time.Second).Should(Equal([]byte("v2\n")))
		Eventually(func() float64 {
			return metricSum(scrape(port), "choria_ccm_agent_apply_duration_seconds_count", `manifest="obj://ccm-manifests/app.tar.gz"`)
		}).Should(BeNumerically(">=", 2))

		nc, err := nats.Connect(url)
		Expect(err).NotTo(HaveOccurred())
		defer nc.Close()
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		obs, err := js.ObjectStore(context.Background(), "ccm-manifests")
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(bundle, "manifest.yaml"), []byte(ccmFileManifest(target, "unsigned-canary\n", "")), 0o644)).To(Succeed())
		data, err := sources.Pack(bundle)
		Expect(err).NotTo(HaveOccurred())
		_, err = obs.Put(context.Background(), jetstream.ObjectMeta{Name: "app.tar.gz"}, bytes.NewReader(data))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string { b, _ := os.ReadFile(audit); return string(b) }).WithTimeout(20 * time.Second).Should(
			And(ContainSubstring(`"decision":"unauthenticated"`), ContainSubstring("bundle is not signed")))
		Expect(os.ReadFile(target)).To(Equal([]byte("v2\n")))
		Expect(metricSum(scrape(port), "choria_ccm_agent_bundle_refused_count", `manifest="obj://ccm-manifests/app.tar.gz"`)).To(BeNumerically(">=", 1))
	})

	It("records each apply in the history stream as a source's run and counts it in both metric sets; without NATS it says history is off", func() {
		b := brokertest.Start(GinkgoT())
		url := b.ClientURL()
		code, _, errOut := runOrch("history", "init", "--server", url)
		Expect(code).To(Equal(0), errOut)
		const identity = "ccm-alone-1"
		target, m := filepath.Join(dir, "motd"), filepath.Join(dir, "motd.yaml")
		Expect(os.WriteFile(m, []byte(ccmFileManifest(target, "managed\n", "")), 0o600)).To(Succeed())
		port := freePort()
		cfgPath := filepath.Join(dir, "config.yaml")
		// registration: jetstream makes the agent connect; the manifest
		// registers nothing.
		Expect(os.WriteFile(cfgPath, fmt.Appendf(nil, "interval: 1h\nmanifests: [%s]\nregistration: jetstream\ncache_dir: %s\nmonitor_port: %d\n", m, filepath.Join(dir, "ccm", "source"), port), 0o600)).To(Succeed())
		proc := startProcess(ccmAgentBin(), "agent", "--config", cfgPath, "--server", url, "--identity", identity, "--monitor-host", "127.0.0.1")
		Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(30 * time.Second).Should(Equal([]byte("managed\n")))

		var list []struct {
			RequestID string `json:"request_id"`
			Asked     string `json:"asked"`
			Expected  int    `json:"expected"`
			Hosts     struct {
				Changed int `json:"changed"`
			} `json:"hosts"`
		}
		Eventually(func() string {
			_, out, _ := runOrch("history", "list", "--host", identity, "--json", "--server", url)
			Expect(json.Unmarshal([]byte(out), &list)).To(Succeed(), out)
			if len(list) == 0 {
				return ""
			}
			return list[0].Asked
		}).WithTimeout(20 * time.Second).Should(Equal("source " + m + " (start): apply"))
		Expect(list).To(HaveLen(1))
		Expect(list[0].Expected).To(Equal(1))
		Expect(list[0].Hosts.Changed).To(Equal(1))
		code, out, errOut := runOrch("history", "show", list[0].RequestID, "--server", url)
		Expect(code).To(Equal(0), out+errOut)
		Expect(out).To(ContainSubstring(identity))

		page := scrape(port)
		Expect(metricSum(page, "choria_ccm_agent_apply_duration_seconds_count", `manifest="`+regexp.QuoteMeta(m)+`"`)).To(BeNumerically("==", 1))
		Expect(page).To(MatchRegexp(`(?m)^ccm_agent_requests_total\{outcome="executed"\} 1$`))
		Expect(page).To(MatchRegexp(`(?m)^ccm_agent_resources_total\{outcome="changed",type="file"\} 1$`))
		Expect(proc.Err.Contents()).NotTo(ContainSubstring("history is off"))

		// Without NATS (nothing in the configuration needs it) the runs are
		// still counted, and the log says once that history is off.
		local := filepath.Join(dir, "local.yaml")
		port2 := freePort()
		Expect(os.WriteFile(local, fmt.Appendf(nil, "interval: 1h\nmanifests: [%s]\ncache_dir: %s\nmonitor_port: %d\n", m, filepath.Join(dir, "local", "source"), port2), 0o600)).To(Succeed())
		alone := startProcess(ccmAgentBin(), "agent", "--config", local, "--identity", identity, "--monitor-host", "127.0.0.1")
		Eventually(alone.Err).WithTimeout(30 * time.Second).Should(gbytes.Say(`run history is off.*no NATS connection`))
		Eventually(func() string { return scrape(port2) }).WithTimeout(30 * time.Second).Should(MatchRegexp(`(?m)^ccm_agent_requests_total\{outcome="executed"\} 1$`))
		Expect(strings.Count(string(alone.Err.Contents()), "run history is off")).To(Equal(1))
	})

	It("remediates a CRITICAL health check with an apply, and leaves a WARNING alone", func() {
		crit, warn := filepath.Join(dir, "critical.conf"), filepath.Join(dir, "warning.conf")
		critM, warnM := filepath.Join(dir, "critical.yaml"), filepath.Join(dir, "warning.yaml")
		Expect(os.WriteFile(critM, []byte(ccmFileManifest(crit, "managed\n", "/bin/sh -c 'test -f "+crit+" || exit 2'")), 0o600)).To(Succeed())
		Expect(os.WriteFile(warnM, []byte(ccmFileManifest(warn, "managed\n", "/bin/sh -c 'test -f "+warn+" || exit 1'")), 0o600)).To(Succeed())
		port := freePort()
		cfgPath := filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(cfgPath, fmt.Appendf(nil, "interval: 1h\nhealth_check_interval: 1s\nmanifests: [%s, %s]\ncache_dir: %s\nmonitor_port: %d\n", critM, warnM, filepath.Join(dir, "source"), port), 0o600)).To(Succeed())
		startProcess(ccmAgentBin(), "agent", "--config", cfgPath, "--monitor-host", "127.0.0.1")

		// Both applied, and a health-check-only run saw both OK after that.
		Eventually(func() float64 {
			return metricSum(scrape(port), "choria_ccm_healthcheck_status_count", `status="OK"`)
		}).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 4))
		Expect(os.Remove(crit)).To(Succeed())
		Expect(os.Remove(warn)).To(Succeed())

		Eventually(func() ([]byte, error) { return os.ReadFile(crit) }).WithTimeout(20 * time.Second).Should(Equal([]byte("managed\n")))
		Eventually(func() float64 {
			return metricSum(scrape(port), "choria_ccm_healthcheck_status_count", `status="WARNING"`)
		}).WithTimeout(20 * time.Second).Should(BeNumerically(">=", 3))
		Expect(warn).NotTo(BeAnExistingFile())
		page := scrape(port)
		Expect(metricSum(page, "choria_ccm_agent_healthcheck_remediations_count", `manifest="`+critM+`"`)).To(BeNumerically(">=", 1))
		Expect(metricSum(page, "choria_ccm_agent_healthcheck_remediations_count", `manifest="`+warnM+`"`)).To(BeZero())
	})

	It("registers three web hosts into the registration stream, signed by each host's own key; a load-balancer agent renders exactly those three and, at its own next scheduled run, exactly two within the TTL after one's health check goes CRITICAL; ccm-orch registration query, watch and rm see and change them", func() {
		b := brokertest.Start(GinkgoT())
		url := b.ClientURL()
		orch := func(args ...string) string {
			GinkgoHelper()
			s := startProcess(orchBin, append(args, "--server", url)...)
			Eventually(s).WithTimeout(60 * time.Second).Should(gexec.Exit(0))
			return string(s.Out.Contents())
		}
		Expect(orch("history", "init")).To(ContainSubstring("registration stream REGISTRATION"))
		watch := startProcess(orchBin, "registration", "watch", "production", "http", "web", "--server", url)

		var agents []*gexec.Session
		for i := 1; i <= 3; i++ {
			hd := filepath.Join(dir, strconv.Itoa(i))
			Expect(os.MkdirAll(hd, 0o700)).To(Succeed())
			healthy := filepath.Join(hd, "healthy")
			Expect(os.WriteFile(healthy, nil, 0o600)).To(Succeed())
			m := filepath.Join(hd, "web.yaml")
			doc := ccmFileManifest(filepath.Join(hd, "site"), "served\n", "/bin/sh -c 'test -f "+healthy+" || exit 2'") +
				"            register_when_stable:\n              - cluster: production\n                service: web\n                protocol: http\n                address: \"{{ lookup('facts.ip') }}\"\n                port: 80\n                priority: 10\n                ttl: 1m\n"
			Expect(os.WriteFile(m, []byte(doc), 0o600)).To(Succeed())
			cfg := filepath.Join(hd, "config.yaml")
			Expect(os.WriteFile(cfg, fmt.Appendf(nil, "interval: 1h\nhealth_check_interval: 1s\nmanifests: [%s]\nregistration: jetstream\ncache_dir: %s\n", m, filepath.Join(hd, "source")), 0o600)).To(Succeed())
			agents = append(agents, startProcess(ccmAgentBin(), "agent", "--config", cfg, "--server", url, "--identity", fmt.Sprintf("web%d", i), "--fact", fmt.Sprintf("ip=10.0.0.%d", i)))
		}
		query := func() []string {
			var recs []struct {
				Address string `json:"address"`
				Signer  string `json:"signer"`
			}
			Expect(json.Unmarshal([]byte(orch("registration", "query", "production", "http", "web", "--json")), &recs)).To(Succeed())
			var out []string
			signers := map[string]bool{}
			for _, r := range recs {
				out = append(out, r.Address)
				signers[r.Signer] = true
			}
			Expect(signers).To(HaveLen(len(recs)), "each host signs with its own key: %v", recs)
			return out
		}
		Eventually(query).WithTimeout(60 * time.Second).Should(Equal([]string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}))
		Eventually(watch.Out).WithTimeout(20 * time.Second).Should(gbytes.Say(`registered web in production: http://10\.0\.0\.\d:80 priority 10 ttl 1m`))

		// A fourth agent, the load balancer, renders its upstreams from
		// registrations() every interval (30s, CCM's minimum); it registers
		// nothing itself.
		upstreams := filepath.Join(dir, "lb", "upstreams.conf")
		Expect(os.MkdirAll(filepath.Join(dir, "lb"), 0o700)).To(Succeed())
		lbM := filepath.Join(dir, "lb", "lb.yaml")
		Expect(os.WriteFile(lbM, fmt.Appendf(nil, ccmLBManifest, upstreams), 0o600)).To(Succeed())
		lbCfg := filepath.Join(dir, "lb", "config.yaml")
		lbPort := freePort()
		Expect(os.WriteFile(lbCfg, fmt.Appendf(nil, "interval: 30s\nmanifests: [%s]\ncache_dir: %s\nmonitor_port: %d\n", lbM, filepath.Join(dir, "lb", "source"), lbPort), 0o600)).To(Succeed())
		lb := startProcess(ccmAgentBin(), "agent", "--config", lbCfg, "--server", url, "--identity", "lb1", "--monitor-host", "127.0.0.1")
		lbApplies := func() float64 {
			return metricSum(scrape(lbPort), "choria_ccm_agent_apply_duration_seconds_count", `manifest="`+lbM+`"`)
		}
		readUpstreams := func() (string, error) { b, err := os.ReadFile(upstreams); return string(b), err }
		Eventually(readUpstreams).WithTimeout(30 * time.Second).Should(Equal("server 10.0.0.1:80\nserver 10.0.0.2:80\nserver 10.0.0.3:80"))
		Eventually(lbApplies).Should(BeNumerically("==", 1))

		failed := time.Now()
		Expect(os.Remove(filepath.Join(dir, "2", "healthy"))).To(Succeed())
		Eventually(query).WithTimeout(30 * time.Second).Should(Equal([]string{"10.0.0.1", "10.0.0.3"}))
		// The entry's TTL is a minute: two upstreams well before that came
		// from the withdrawal, read by the load balancer's second run (its
		// schedule, not a restart: the same process, two applies).
		Eventually(readUpstreams).WithTimeout(45 * time.Second).WithPolling(250 * time.Millisecond).Should(Equal("server 10.0.0.1:80\nserver 10.0.0.3:80"))
		took := time.Since(failed)
		GinkgoWriter.Printf("load balancer dropped web2 %s after its health check failed\n", took.Round(time.Millisecond))
		Expect(took).To(BeNumerically("<", time.Minute))
		Expect(lb.ExitCode()).To(Equal(-1), "the load balancer was not restarted")
		Eventually(lbApplies).Should(BeNumerically("==", 2))

		// A running agent publishes its entry again at its next run: stop
		// web3 first, then remove its entry (its TTL is a minute).
		Eventually(agents[2].Interrupt()).WithTimeout(30 * time.Second).Should(gexec.Exit())
		Expect(orch("registration", "rm", "--cluster", "production", "--service", "web", "--protocol", "http", "--address", "10.0.0.3", "--port", "80", "--force")).To(ContainSubstring("removed choria.ccm.registration.v1.production.http.web.10_0_0_3."))
		Expect(query()).To(Equal([]string{"10.0.0.1"}))
	})
	It("refuses, audits and never publishes a service outside the policy's registration.services, registering the listed one", func() {
		b := brokertest.Start(GinkgoT())
		url := b.ClientURL()
		code, out, errOut := runOrch("history", "init", "--server", url)
		Expect(code).To(Equal(0), out+errOut)
		healthy := filepath.Join(dir, "healthy")
		Expect(os.WriteFile(healthy, nil, 0o600)).To(Succeed())
		db := filepath.Join(dir, "db")
		m := filepath.Join(dir, "host.yaml")
		Expect(os.WriteFile(m, []byte(ccmFileManifest(filepath.Join(dir, "site"), "served\n", "/bin/sh -c 'test -f "+healthy+" || exit 2'")+webRegistration("10.0.0.1", "")+
			fmt.Sprintf("    - file:\n        - %q:\n            ensure: present\n            content: \"db\\n\"\n            owner: root\n            group: root\n            mode: \"0644\"\n            register_when_stable:\n              - {cluster: production, service: db, protocol: tcp, address: 10.0.0.1, port: 5432, priority: 1, ttl: 1m}\n", db)), 0o600)).To(Succeed())
		pol := filepath.Join(dir, "policy.yaml")
		Expect(os.WriteFile(pol, []byte("registration: {services: [web]}\n"), 0o600)).To(Succeed())
		cfg := filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(cfg, fmt.Appendf(nil, "interval: 1h\nhealth_check_interval: 1s\nmanifests: [%s]\nregistration: jetstream\ncache_dir: %s\n", m, filepath.Join(dir, "source")), 0o600)).To(Succeed())
		audit := filepath.Join(dir, "audit.log")
		agent := startProcess(ccmAgentBin(), "agent", "--config", cfg, "--policy", pol, "--audit-log", audit, "--server", url, "--identity", "web1")

		query := func(service string) func() []string {
			return func() []string {
				code, out, errOut := runOrch("registration", "query", "*", "*", service, "--json", "--server", url)
				Expect(code).To(Equal(0), errOut)
				var recs []struct {
					Service string `json:"service"`
					Address string `json:"address"`
					Port    int    `json:"port"`
				}
				Expect(json.Unmarshal([]byte(out), &recs)).To(Succeed(), out)
				var got []string
				for _, r := range recs {
					got = append(got, fmt.Sprintf("%s %s:%d", r.Service, r.Address, r.Port))
				}
				return got
			}
		}
		// The listed service is registered: the agent runs and registers.
		Eventually(query("web")).WithTimeout(60 * time.Second).Should(Equal([]string{"web 10.0.0.1:80"}))
		Expect(db).To(BeAnExistingFile(), "the resource itself is applied; only its entry is refused")
		Eventually(func() string { b, _ := os.ReadFile(audit); return string(b) }).WithTimeout(20 * time.Second).Should(And(
			ContainSubstring(`"decision":"forbidden"`), ContainSubstring(`"value":"db"`),
			ContainSubstring(`registration of service \"db\" by file#`+db+` refused: the service is not listed (registration.services [web])`)))
		Eventually(agent.Err).Should(gbytes.Say(`registrations: refused by the policy.*service=db`))
		// Health-check runs keep judging it: never published.
		Consistently(query("db")).WithTimeout(3 * time.Second).WithPolling(time.Second).Should(BeEmpty())
		Expect(query("*")()).To(Equal([]string{"web 10.0.0.1:80"}))
	})
	It("says registrations() needs NATS when the agent is given no connection and its configuration reads nothing from NATS", func() {
		upstreams := filepath.Join(dir, "upstreams.conf")
		m := filepath.Join(dir, "lb.yaml")
		Expect(os.WriteFile(m, fmt.Appendf(nil, ccmLBManifest, upstreams), 0o600)).To(Succeed())
		cfg := filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(cfg, fmt.Appendf(nil, "interval: 1h\nmanifests: [%s]\ncache_dir: %s\n", m, filepath.Join(dir, "source")), 0o600)).To(Succeed())
		cmd := exec.Command(ccmAgentBin(), "agent", "--config", cfg, "--identity", "lb1")
		cmd.Env = append(os.Environ(), "NATS_URL=", "NATS_CONTEXT=", "CCM_SERVER=")
		agent, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { agent.Interrupt().Wait(30 * time.Second) })
		Eventually(agent.Err).WithTimeout(30 * time.Second).Should(gbytes.Say(`registrations\(\): this agent is not connected to NATS`))
		Expect(upstreams).NotTo(BeAnExistingFile())
	})
})
