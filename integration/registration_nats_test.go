package integration_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/registration"
)

// registration: nats publishes a stable resource's entries on core NATS,
// signed with the host's key, without the registration stream.
var _ = Describe("CCM agent registration: nats", func() {
	It("publishes a stable resource's entry on core NATS, signed by the host's own key, with its templates expanded", func() {
		dir := GinkgoT().TempDir()
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		defer nc.Close()
		msgs := make(chan *nats.Msg, 64)
		sub, err := nc.ChanSubscribe(registration.SubjectPrefix+".>", msgs)
		Expect(err).ToNot(HaveOccurred())
		defer func() { _ = sub.Unsubscribe() }()
		Expect(nc.Flush()).To(Succeed())

		m := filepath.Join(dir, "web.yaml")
		doc := ccmFileManifest(filepath.Join(dir, "site"), "served\n", "") +
			"            register_when_stable:\n              - cluster: production\n                service: web\n                protocol: http\n                address: \"{{ lookup('facts.ip') }}\"\n                port: \"{{ lookup('data.port') }}\"\n                priority: 10\n"
		doc = "data:\n  port: 8080\n" + doc
		Expect(os.WriteFile(m, []byte(doc), 0o600)).To(Succeed())
		cfg := filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(cfg, fmt.Appendf(nil, "interval: 1h\nhealth_check_interval: 1s\nmanifests: [%s]\nregistration: nats\ncache_dir: %s\n", m, filepath.Join(dir, "source")), 0o600)).To(Succeed())
		key := filepath.Join(dir, "agent.seed")
		startProcess(ccmAgentBin(), "agent", "--config", cfg, "--server", b.ClientURL(), "--identity", "web9", "--fact", "ip=10.0.0.9", "--key", key)

		var msg *nats.Msg
		Eventually(msgs).WithTimeout(30 * time.Second).Should(Receive(&msg))
		var e registration.Entry
		Expect(json.Unmarshal(msg.Data, &e)).To(Succeed())
		Expect(e).To(HaveField("Address", "10.0.0.9"))
		Expect(e).To(And(HaveField("Cluster", "production"), HaveField("Service", "web"), HaveField("Protocol", "http"), HaveField("Port", 8080), HaveField("Priority", 10)))
		Expect(msg.Subject).To(HavePrefix(registration.SubjectPrefix + ".production.http.web."))
		signer := msg.Header.Get(protocol.HeaderSigner)
		Expect(protocol.Verify(msg.Data, signer, msg.Header.Get(protocol.HeaderSignature))).To(Succeed())
		seed, err := os.ReadFile(key)
		Expect(err).ToNot(HaveOccurred())
		kp, err := nkeys.FromSeed(bytes.TrimSpace(seed))
		Expect(err).ToNot(HaveOccurred())
		pub, _ := kp.PublicKey()
		Expect(signer).To(Equal(pub), "signed with the host's own key")
		// Health-check-only runs publish it again while it stays stable.
		Eventually(msgs).WithTimeout(20 * time.Second).Should(Receive())
	})
})
