package integration_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// sourceRuns reads the history records of identity's runs of a manifest
// source: their trigger and reply.
func sourceRuns(js jetstream.JetStream, identity, source string) []assignmentRun {
	var out []assignmentRun
	err := jsstore.Read(context.Background(), js, jsstore.ReadOptions{Filter: protocol.HistorySubjects}, func(r jsstore.Record) error {
		if r.Identity != identity || r.Header.Get(protocol.HeaderSource) != source {
			return nil
		}
		reply, err := protocol.DecodeFleetReply(r.Data, protocol.Limits{MaxBytes: 8 << 20})
		if err != nil {
			return err
		}
		out = append(out, assignmentRun{Trigger: r.Header.Get(protocol.HeaderTrigger), Reply: reply})
		return nil
	})
	Expect(err).ToNot(HaveOccurred())
	return out
}

// The continuous agent inside ccm-agent run: manifest sources in the run
// configuration, applied through the agent's pipeline beside fleet
// requests, recorded in history and counted in the agent's metrics.
var _ = Describe("Manifest sources in ccm-agent run", func() {
	It("applies a source beside a fleet request that runs meanwhile; the run is in history as a source's and counted in the metrics", func() {
		dir := GinkgoT().TempDir()
		const identity = "sources-1"
		ops := newSigningKey(dir, "ops")
		policy := policyFile(dir, signerEntry("ops", ops.pub, "file"))
		b := brokertest.Start(GinkgoT())
		url := b.ClientURL()
		code, _, errOut := runOrch("history", "init", "--server", url)
		Expect(code).To(Equal(0), errOut)

		// The source's apply waits for the file the fleet request makes:
		// it succeeds only when the fleet request ran while it was
		// running.
		fleetFile, sourceFile := filepath.Join(dir, "fleet.txt"), filepath.Join(dir, "source.txt")
		site := filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(site, fmt.Appendf(nil, `ccm:
  resources:
    - exec:
        - "/bin/sh -c 'i=0; while [ ! -f %[1]s ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; test -f %[1]s'": {}
    - file:
        - %[2]q:
            content: "from the source\n"
            owner: root
            group: root
            mode: "0644"
            require: ["exec#/bin/sh -c 'i=0; while [ ! -f %[1]s ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; test -f %[1]s'"]
`, fleetFile, sourceFile), 0o644)).To(Succeed())
		port := freePort()
		cfg := filepath.Join(dir, "agent.yaml")
		Expect(os.WriteFile(cfg, fmt.Appendf(nil, "sources:\n  interval: 1h\n  manifests: [%s]\n", site), 0o644)).To(Succeed())
		proc := startProcess(ccmAgentBin(), "-v", "run", "--config", cfg, "--server", url, "--identity", identity, "--policy", policy,
			"--state-dir", filepath.Join(dir, "state"), "--metrics-listen", "127.0.0.1:"+strconv.Itoa(port))
		Eventually(proc.Err).WithTimeout(20 * time.Second).Should(gbytes.Say("applying a manifest source"))

		code, out, errOut := runOrch("ensure", "file", fleetFile, "--content", "fleet\n", "--owner", "root", "--group", "root", "--mode", "0644",
			"--host", identity, "--key", ops.seedFile, "--server", url)
		Expect(code).To(Equal(0), out+errOut)
		Expect(os.ReadFile(fleetFile)).To(Equal([]byte("fleet\n")))
		Eventually(func() ([]byte, error) { return os.ReadFile(sourceFile) }).WithTimeout(30 * time.Second).Should(Equal([]byte("from the source\n")))

		nc, err := nats.Connect(url)
		Expect(err).ToNot(HaveOccurred())
		defer nc.Close()
		js, err := jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		Eventually(func() []assignmentRun { return sourceRuns(js, identity, site) }).WithTimeout(20 * time.Second).Should(ConsistOf(And(
			HaveField("Trigger", "start"), HaveField("Reply.Error", BeNil()),
			HaveField("Reply.Events", ContainElement(And(HaveField("Name", sourceFile), HaveField("Failed", false)))))))
		Eventually(func() string {
			_, out, _ := runOrch("history", "list", "--host", identity, "--server", url)
			return out
		}).WithTimeout(20 * time.Second).Should(ContainSubstring("source " + site + " (start): apply"))

		page := scrape(port)
		// The fleet request and the source's apply, each executed.
		Expect(page).To(MatchRegexp(`(?m)^ccm_agent_requests_total\{outcome="executed"\} 2$`))
		Expect(metricSum(page, "choria_ccm_agent_apply_duration_seconds_count", `manifest="`+site+`"`)).To(BeNumerically("==", 1))
	})

	It("registers a source's entry naming its identity, signed by the key the node registry holds for it, which registration query trusts", func() {
		dir := GinkgoT().TempDir()
		const identity = "sources-reg"
		ops := newSigningKey(dir, "ops")
		pol := policyFile(dir, signerEntry("ops", ops.pub, "file"))
		Expect(os.WriteFile(pol, append([]byte("registration:\n  services: [web]\n"), must(os.ReadFile(pol))...), 0o600)).To(Succeed())
		b := brokertest.Start(GinkgoT())
		url := b.ClientURL()
		code, _, errOut := runOrch("history", "init", "--server", url)
		Expect(code).To(Equal(0), errOut)
		site := filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(site, []byte(ccmFileManifest(filepath.Join(dir, "served"), "served\n", "")+webRegistration("10.0.0.1", "")), 0o644)).To(Succeed())
		cfg := filepath.Join(dir, "agent.yaml")
		Expect(os.WriteFile(cfg, fmt.Appendf(nil, "sources:\n  interval: 1h\n  manifests: [%s]\n  registration: jetstream\n", site), 0o644)).To(Succeed())
		startProcess(ccmAgentBin(), "run", "--config", cfg, "--server", url, "--identity", identity, "--policy", pol, "--state-dir", filepath.Join(dir, "state"))
		Eventually(func() string {
			_, out, _ := runOrch("registration", "query", "production", "http", "web", "--json", "--server", url)
			return out
		}).WithTimeout(60 * time.Second).Should(And(ContainSubstring(`"host": "`+identity+`"`), ContainSubstring(`"trust": "node registry"`)))
	})
})
