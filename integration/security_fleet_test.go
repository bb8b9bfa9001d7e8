package integration_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("ccm-orch --key against a fleet with a policy", Ordered, func() {
	var (
		f           *fleet
		dir         string
		ops, outlaw signingKey
	)

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		ops = newSigningKey(dir, "ops")
		outlaw = newSigningKey(dir, "outlaw")
		policy := policyFile(dir, signerEntry("ops", ops.pub, "file, exec"))
		f = startFleetWith(fleetOptions{history: true, config: agent.Config{Policy: policy}}, 4, "node", nil, "os=debian,rhel")
	})

	It("runs a signed ensure end to end", func() {
		target := filepath.Join(dir, "ensure-{{ lookup('facts.identity') }}")
		code, doc := f.orchJSON("ensure", "file", target, "--content", "signed", "--owner", "root", "--group", "root", "--mode", "0644", "--key", ops.seedFile)
		Expect(code).To(Equal(0), "%v", doc)
		Expect(doc["summary"].(map[string]any)["hosts"].(map[string]any)["changed"]).To(BeNumerically("==", 4))
		Expect(doc["spoofed"]).To(BeNumerically("==", 0))
		Expect(doc["unverified"]).To(BeNumerically("==", 0), "every reply is checked against the registry's keys")
		Expect(filepath.Join(dir, "ensure-node-0003")).To(BeAnExistingFile())
	})

	It("runs a signed manifest (apply) end to end", func() {
		m := filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(m, []byte(`ccm:
  resources:
    - file:
        - `+dir+`/apply-{{ lookup('facts.identity') }}:
            content: "applied"
            owner: root
            group: root
            mode: "0644"
`), 0o644)).To(Succeed())
		code, out, errOut := f.orch("apply", m, "--where", "os=debian", "--key", ops.seedFile)
		Expect(code).To(Equal(0), out+errOut)
		Expect(errOut).ToNot(ContainSubstring("unsigned"))
		Expect(filepath.Join(dir, "apply-node-0001")).To(BeAnExistingFile())
		Expect(filepath.Join(dir, "apply-node-0002")).ToNot(BeAnExistingFile())
	})

	It("is refused by every agent without --key, and says so", func() {
		code, out, errOut := f.orch("ensure", "file", filepath.Join(dir, "unsigned-{{ lookup('facts.identity') }}"), "--owner", "root", "--group", "root", "--mode", "0644")
		Expect(code).To(Equal(2), out)
		Expect(errOut).To(ContainSubstring("no --key: the request goes unsigned"))
		Expect(out).To(ContainSubstring("unauthenticated"))
		Expect(filepath.Join(dir, "unsigned-node-0001")).ToNot(BeAnExistingFile())
	})

	It("refuses a seed file with wide permissions or bad contents before sending anything", func() {
		wide := filepath.Join(dir, "wide.seed")
		seed, err := os.ReadFile(ops.seedFile)
		Expect(err).ToNot(HaveOccurred())
		Expect(os.WriteFile(wide, seed, 0o644)).To(Succeed())
		code, _, errOut := f.orch("ensure", "file", "/tmp/never", "--owner", "root", "--group", "root", "--mode", "0644", "--key", wide)
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("mode 0644 is wider than 0600"))

		Expect(os.Remove(wide)).To(Succeed())
		Expect(os.WriteFile(wide, []byte("not a seed"), 0o600)).To(Succeed())
		code, _, errOut = f.orch("ensure", "file", "/tmp/never", "--owner", "root", "--group", "root", "--mode", "0644", "--key", wide)
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("not an nkeys seed"))
	})

	It("counts replies injected into its inbox under a real identity as spoofed, not as results", func() {
		sniffer, err := nats.Connect(f.url)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(sniffer.Close)
		reqs, err := sniffer.SubscribeSync(protocol.RequestNodeSubject("node-0001"))
		Expect(err).ToNot(HaveOccurred())
		Expect(sniffer.Flush()).To(Succeed())

		// The real agent takes a second; the forgeries come first.
		s := f.start("ensure", "exec", "/bin/sleep 1", "--host", "node-0001", "--key", ops.seedFile, "--json")
		m, err := reqs.NextMsg(20 * time.Second)
		Expect(err).ToNot(HaveOccurred())
		var sent protocol.FleetRequest
		Expect(json.Unmarshal(m.Data, &sent)).To(Succeed())
		Expect(sent.Reply).To(Equal(m.Reply), "the reply subject is in the signed body")

		forged := protocol.NewFleetReply(sent.ID, "node-0001", time.Now())
		forged.Error = protocol.NewError(protocol.CodeInternal, "forged")
		body, err := forged.Encode()
		Expect(err).ToNot(HaveOccurred())
		Expect(sniffer.Publish(m.Reply, body)).To(Succeed())
		signer, sig, err := protocol.Sign(body, outlaw.kp)
		Expect(err).ToNot(HaveOccurred())
		h := nats.Header{}
		h.Set(protocol.HeaderSigner, signer)
		h.Set(protocol.HeaderSignature, sig)
		Expect(sniffer.PublishMsg(&nats.Msg{Subject: m.Reply, Header: h, Data: body})).To(Succeed())

		Eventually(s).WithTimeout(60 * time.Second).Should(gexec.Exit(0))
		var doc map[string]any
		Expect(json.Unmarshal(s.Out.Contents(), &doc)).To(Succeed())
		Expect(doc["spoofed"]).To(BeNumerically("==", 2))
		Expect(doc["duplicates"]).To(BeNumerically("==", 0))
		hosts := doc["hosts"].([]any)
		Expect(hosts).To(HaveLen(1))
		Expect(hosts[0].(map[string]any)["outcome"]).To(Equal("changed"))
	})
})

var _ = Describe("Reply verification without a known key", Ordered, func() {
	var f *fleet
	BeforeAll(func() { f = startFleet(3, "bare", nil) })

	It("verifies replies against the keys of signed discovery announcements", func() {
		code, doc := f.orchJSON("ensure", "file", filepath.Join(GinkgoT().TempDir(), "y"), "--owner", "root", "--group", "root", "--mode", "0644", "--noop", "--discovery", "broadcast")
		Expect(code).To(Equal(5))
		Expect(doc["discovery"]).To(Equal("broadcast"))
		Expect(doc["replied"]).To(BeNumerically("==", 3))
		Expect(doc["unverified"]).To(BeNumerically("==", 0))
	})

	It("takes the reply of an explicit host with no registry entry as unverified", func() {
		nc, err := nats.Connect(f.url)
		Expect(err).ToNot(HaveOccurred())
		defer nc.Close()
		js, err := jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		kv, err := js.KeyValue(context.Background(), protocol.NodesBucket)
		Expect(err).ToNot(HaveOccurred())
		Expect(kv.Delete(context.Background(), "bare-0001")).To(Succeed())

		code, doc := f.orchJSON("ensure", "file", filepath.Join(GinkgoT().TempDir(), "x"), "--owner", "root", "--group", "root", "--mode", "0644", "--host", "bare-0001", "--noop")
		Expect(code).To(Equal(5))
		Expect(doc["unverified"]).To(BeNumerically("==", 1))
		Expect(doc["spoofed"]).To(BeNumerically("==", 0))
		_, out, _ := f.orch("ensure", "file", filepath.Join(GinkgoT().TempDir(), "x"), "--owner", "root", "--group", "root", "--mode", "0644", "--host", "bare-0001", "--noop")
		Expect(out).To(ContainSubstring("1 unverified (no known key)"))
	})
})
