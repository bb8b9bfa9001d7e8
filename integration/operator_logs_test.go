package integration_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/broker/brokertest"
)

// jsonLogLines decodes the JSON log lines in out (other lines are left
// out).
func jsonLogLines(out []byte) []map[string]any {
	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			lines = append(lines, m)
		}
	}
	return lines
}

// emptyFields are the keys of m (nested objects included, as a.b) whose
// value is an empty string.
func emptyFields(m map[string]any, prefix string) []string {
	var out []string
	for k, v := range m {
		switch v := v.(type) {
		case string:
			if v == "" {
				out = append(out, prefix+k)
			}
		case map[string]any:
			out = append(out, emptyFields(v, prefix+k+".")...)
		}
	}
	return out
}

// linesWith are the lines whose key has value.
func linesWith(lines []map[string]any, key string, value any) []map[string]any {
	var out []map[string]any
	for _, m := range lines {
		if m[key] == value {
			out = append(out, m)
		}
	}
	return out
}

// requestOf is the request id ccm-orch's summary names.
func requestOf(out string) string {
	m := regexp.MustCompile(`\(request ([a-z0-9]+),`).FindStringSubmatch(out)
	Expect(m).To(HaveLen(2), "a request id in %q", out)
	return m[1]
}

// Issue 42 (operator round 3): what an operator reads of a running agent,
// its JSON log and its metrics page, seen on the real binaries.
var _ = Describe("ccm-agent's log and metrics (issue 42)", func() {
	It("names the request on every line about a fleet request, logs a failed resource once, writes no empty field, and serves each assignment's last run, its convergence age and health-check gauges with no empty label", func() {
		dir := GinkgoT().TempDir()
		const identity = "logs-1"
		ops := newSigningKey(dir, "ops")
		pol := policyFile(dir, signerEntry("ops", ops.pub, "file, exec"))
		b := brokertest.Start(GinkgoT())
		url := b.ClientURL()
		code, _, errOut := runOrch("history", "init", "--server", url)
		Expect(code).To(Equal(0), errOut)
		port := freePort()
		proc := startProcess(ccmAgentBin(), "--log-format", "json", "--log-level", "debug", "run", "--server", url, "--identity", identity,
			"--policy", pol, "--state-dir", filepath.Join(dir, "state"), "--metrics-listen", "127.0.0.1:"+strconv.Itoa(port))
		Eventually(proc.Err).WithTimeout(20 * time.Second).Should(gbytes.Say(`"msg":"serving"`))

		// A file under a regular file fails; another is made.
		blocker := filepath.Join(dir, "blocker")
		Expect(os.WriteFile(blocker, nil, 0o644)).To(Succeed())
		failing, made := filepath.Join(blocker, "x"), filepath.Join(dir, "made.txt")
		ensure := func(path string) (int, string) {
			code, out, errOut := runOrch("ensure", "file", path, "--content", "x\n", "--owner", "root", "--group", "root", "--mode", "0644",
				"--host", identity, "--key", ops.seedFile, "--server", url)
			return code, out + errOut
		}
		code, out := ensure(failing)
		Expect(code).To(Equal(2), out)
		failedID := requestOf(out)
		code, out = ensure(made)
		Expect(code).To(Equal(0), out)
		madeID := requestOf(out)

		// An assignment whose health check is WARNING until a file exists.
		site, healthy := filepath.Join(dir, "site.txt"), filepath.Join(dir, "healthy")
		manifest := filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(manifest, []byte(ccmFileManifest(site, "site\n", "/usr/bin/test -f "+healthy)), 0o644)).To(Succeed())
		code, out, errOut = runOrch("assign", "web-site", manifest, "--interval", "1s", "--key", ops.seedFile, "--server", url)
		Expect(code).To(Equal(0), out+errOut)
		check := `\{check="probe",resource="file#` + regexp.QuoteMeta(site) + `"\}`
		Eventually(func() string { return scrape(port) }).WithTimeout(30 * time.Second).Should(And(
			MatchRegexp(`(?m)^ccm_agent_assignment_last_run\{assignment="web-site",outcome="failed"\} 1$`),
			MatchRegexp(`(?m)^ccm_agent_health_check_status`+check+` 1$`)))
		page := scrape(port)
		Expect(page).To(MatchRegexp(`(?m)^ccm_agent_assignment_last_run\{assignment="web-site",outcome="stable"\} 0$`))
		Expect(page).To(MatchRegexp(`(?m)^ccm_agent_assignment_last_run_timestamp_seconds\{assignment="web-site"\} [0-9.]+e\+09$`))
		Expect(page).ToNot(ContainSubstring("ccm_agent_assignment_convergence_age_seconds{"), "not converged yet")

		Expect(os.WriteFile(healthy, nil, 0o644)).To(Succeed())
		Eventually(func() string { return scrape(port) }).WithTimeout(30 * time.Second).Should(And(
			MatchRegexp(`(?m)^ccm_agent_assignment_last_run\{assignment="web-site",outcome="stable"\} 1$`),
			MatchRegexp(`(?m)^ccm_agent_health_check_status`+check+` 0$`),
			MatchRegexp(`(?m)^ccm_agent_assignment_converged_timestamp_seconds\{assignment="web-site"\} [0-9.]+e\+09$`),
			MatchRegexp(`(?m)^ccm_agent_assignment_convergence_age_seconds\{assignment="web-site"\} [0-9.e+-]+$`)))
		page = scrape(port)
		Expect(page).To(MatchRegexp(`(?m)^ccm_agent_assignment_last_run\{assignment="web-site",outcome="failed"\} 0$`))
		Expect(page).To(MatchRegexp(`(?m)^ccm_agent_requests_total\{outcome="executed"\} [1-9][0-9]*$`))
		Expect(page).To(MatchRegexp(`(?m)^ccm_agent_request_errors_total\{code="forbidden"\} 0$`))
		Expect(page).ToNot(ContainSubstring(`=""`), "no metric has an empty label")

		lines := jsonLogLines(proc.Err.Contents())
		Expect(lines).ToNot(BeEmpty())
		for _, m := range lines {
			Expect(emptyFields(m, "")).To(BeEmpty(), "no empty field: %v", m)
			if _, ok := m["resource"]; ok {
				Expect(m).To(HaveKey("request"), "a line about a resource names its request: %v", m)
				Expect(m).To(HaveKeyWithValue("identity", identity), "and its host: %v", m)
			}
		}
		for _, raw := range strings.Split(string(proc.Err.Contents()), "\n") {
			Expect(strings.Count(raw, `"identity":`)).To(BeNumerically("<=", 1), "one identity a line: %s", raw)
		}
		failed := linesWith(lines, "request", failedID)
		Expect(failed).To(HaveLen(1), "the failed resource, logged once: %v", failed)
		Expect(failed[0]).To(And(HaveKeyWithValue("level", "ERROR"), HaveKeyWithValue("msg", "failed"), HaveKeyWithValue("resource", "file#"+failing),
			HaveKeyWithValue("signer", ops.pub), HaveKeyWithValue("error", ContainSubstring("not a directory"))))
		madeLines := linesWith(lines, "request", madeID)
		Expect(madeLines).To(ContainElements(
			And(HaveKeyWithValue("msg", "changing file"), HaveKeyWithValue("resource", "file#"+made)),
			And(HaveKeyWithValue("msg", "changed"), HaveKeyWithValue("resource", "file#"+made), HaveKeyWithValue("signer", ops.pub))))
		var runs []map[string]any
		for _, m := range linesWith(lines, "assignment", "web-site") {
			if m["msg"] == "running assignment" {
				runs = append(runs, m)
				Expect(m["request"]).To(HavePrefix("web-site_r1_"), "%v", m)
				Expect(m).To(HaveKeyWithValue("signer", ops.pub))
			}
		}
		Expect(runs).ToNot(BeEmpty())
		checks := 0
		for _, m := range lines {
			if m["msg"] == "health check" {
				checks++
				Expect(m["request"]).To(HavePrefix("web-site_r1_"), "a health check's line names its run: %v", m)
				Expect(m).To(HaveKeyWithValue("resource", "file#"+site))
			}
		}
		Expect(checks).To(BeNumerically(">=", 2))
	})

	It("keeps an idle object store watch quiet while the broker is away, the disconnection its one warning, and watching once it is back", func() {
		dir := GinkgoT().TempDir()
		port := freePort()
		url := fmt.Sprintf("nats://127.0.0.1:%d", port)
		brokerArgs := []string{"run", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--store", filepath.Join(dir, "store")}
		const brokerReady = `ready \(1 replica\)`
		broker := runBrokerBinary(brokerArgs, brokerReady)
		code, _, errOut := runOrch("history", "init", "--server", url)
		Expect(code).To(Equal(0), errOut)
		ops := newSigningKey(dir, "ops")
		pol := policyFile(dir, signerEntry("ops", ops.pub, "file"))
		target, bundle := filepath.Join(dir, "app.conf"), filepath.Join(dir, "bundle")
		Expect(os.MkdirAll(bundle, 0o755)).To(Succeed())
		put := func(content string) {
			GinkgoHelper()
			Expect(os.WriteFile(filepath.Join(bundle, "manifest.yaml"), []byte(ccmFileManifest(target, content, "")), 0o644)).To(Succeed())
			code, out, errOut := runOrch("manifest", "put", bundle, "obj://ccm-manifests/app.tar.gz", "--key", ops.seedFile, "--server", url)
			Expect(code).To(Equal(0), out+errOut)
		}
		put("v1\n")
		cfg := filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(cfg, fmt.Appendf(nil, "interval: 5m\nmanifests:\n  - obj://ccm-manifests/app.tar.gz\ncache_dir: %s\n", filepath.Join(dir, "source")), 0o600)).To(Succeed())
		agent := startProcess(ccmAgentBin(), "--log-format", "json", "--log-level", "debug", "agent", "--config", cfg, "--policy", pol, "--server", url)
		Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(30 * time.Second).Should(Equal([]byte("v1\n")))
		logs := func() []map[string]any { return jsonLogLines(agent.Err.Contents()) }
		Eventually(func() []map[string]any { return linesWith(logs(), "msg", "watching the object store") }).ShouldNot(BeEmpty())

		// nats.go checks the watch's heartbeats every 10s: with the broker
		// away it reports the consumer not active, a debug line.
		broker.Interrupt()
		Eventually(broker).WithTimeout(30 * time.Second).Should(gexec.Exit())
		notActive := func() []map[string]any { return linesWith(logs(), "error", "nats: consumer not active") }
		Eventually(notActive).WithTimeout(60 * time.Second).ShouldNot(BeEmpty())
		runBrokerBinary(brokerArgs, brokerReady)
		Eventually(func() []map[string]any { return linesWith(logs(), "msg", "NATS reconnected") }).WithTimeout(30 * time.Second).ShouldNot(BeEmpty())
		changes := len(linesWith(logs(), "msg", "object store change"))
		put("v2\n")
		Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(30 * time.Second).Should(Equal([]byte("v2\n")))
		Expect(len(linesWith(logs(), "msg", "object store change"))).To(BeNumerically(">", changes), "the watch saw v2")

		for _, m := range notActive() {
			Expect(m).To(HaveKeyWithValue("level", "DEBUG"))
		}
		Expect(linesWith(logs(), "msg", "NATS disconnected")).To(ConsistOf(HaveKeyWithValue("level", "WARN")), "the disconnection, said once")
		for _, m := range logs() {
			if m["level"] == "WARN" || m["level"] == "ERROR" {
				Expect(m["msg"]).To(BeElementOf("NATS disconnected", "could not fetch the manifest bundle"), "%v", m)
			}
		}
	})

	It("names the signer of an obj:// bundle in the audit lines of its runs", func() {
		dir := GinkgoT().TempDir()
		b := brokertest.Start(GinkgoT())
		url := b.ClientURL()
		code, _, errOut := runOrch("history", "init", "--server", url)
		Expect(code).To(Equal(0), errOut)
		ops := newSigningKey(dir, "ops")
		pol := policyFile(dir, signerEntry("ops", ops.pub, "file"))
		target, bundle := filepath.Join(dir, "app.conf"), filepath.Join(dir, "bundle")
		Expect(os.MkdirAll(bundle, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(bundle, "manifest.yaml"), []byte(ccmFileManifest(target, "v1\n", "")), 0o644)).To(Succeed())
		code, out, errOut := runOrch("manifest", "put", bundle, "obj://ccm-manifests/app.tar.gz", "--key", ops.seedFile, "--server", url)
		Expect(code).To(Equal(0), out+errOut)

		cfg := filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(cfg, fmt.Appendf(nil, "interval: 5m\nmanifests:\n  - obj://ccm-manifests/app.tar.gz\ncache_dir: %s\n", filepath.Join(dir, "source")), 0o600)).To(Succeed())
		audit := filepath.Join(dir, "audit.log")
		startProcess(ccmAgentBin(), "agent", "--config", cfg, "--policy", pol, "--audit-log", audit, "--server", url)
		Eventually(func() ([]byte, error) { return os.ReadFile(target) }).WithTimeout(30 * time.Second).Should(Equal([]byte("v1\n")))

		// The bundle's line, and the run's two (before and after).
		var lines []map[string]any
		Eventually(func() []map[string]any {
			data, _ := os.ReadFile(audit)
			lines = jsonLogLines(data)
			return lines
		}).WithTimeout(20 * time.Second).Should(HaveLen(3))
		for _, m := range lines {
			Expect(m).To(HaveKeyWithValue("subject", "obj://ccm-manifests/app.tar.gz"))
			Expect(m).To(HaveKeyWithValue("signer", map[string]any{"name": "ops", "key": ops.pub}), "%v", m)
		}
		Expect(strings.Count(string(must(os.ReadFile(audit))), `"request_id":"source_`)).To(Equal(2), "the run's lines")
	})
})
