package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
)

// kvGet() as CCM's templates page lists it (docs/content/templates/
// _index.md): a value of a NATS JetStream key-value bucket, read with the
// command's NATS connection.
// secretsBroker starts a broker whose bucket "secrets" holds canary at
// motd.token, and returns its URL.
func secretsBroker(canary string) string {
	GinkgoHelper()
	b := brokertest.Start(GinkgoT())
	nc, err := nats.Connect(b.ClientURL())
	Expect(err).ToNot(HaveOccurred())
	DeferCleanup(nc.Close)
	js, err := jetstream.New(nc)
	Expect(err).ToNot(HaveOccurred())
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "secrets"})
	Expect(err).ToNot(HaveOccurred())
	_, err = kv.PutString(context.Background(), "motd.token", canary)
	Expect(err).ToNot(HaveOccurred())
	return b.ClientURL()
}

var _ = Describe("ccm-agent apply with kvGet", func() {
	var dir, motd, m string
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		for _, k := range []string{"CCM_SERVER", "NATS_URL", "NATS_CONTEXT"} {
			GinkgoT().Setenv(k, "")
		}
		// No nats CLI context is selected.
		GinkgoT().Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
		GinkgoT().Setenv("HOME", dir)
		motd = filepath.Join(dir, "motd")
		m = filepath.Join(dir, "m.yaml")
		Expect(os.WriteFile(m, []byte(`ccm:
  resources:
    - file:
        - "`+motd+`":
            content: "token=${ kvGet('secrets', 'motd.token') }\n"
            owner: root
            group: root
            mode: "0600"
`), 0o644)).To(Succeed())
	})

	It("reads the bucket through --server, and keeps the value out of the output", func() {
		const canary = "kv-canary-0c6e2a"
		url := secretsBroker(canary)

		code, out, errOut := agent("apply", m, "--server", url, "--json")
		Expect(code).To(Equal(0), out+errOut)
		Expect(os.ReadFile(motd)).To(Equal([]byte("token=" + canary + "\n")))
		Expect(out + errOut).ToNot(ContainSubstring(canary))

		code, out, errOut = agent("apply", m, "--server", url)
		Expect(code).To(Equal(0), out+errOut)
		Expect(out).To(ContainSubstring("file#" + motd + " stable"))
	})

	It("reads the bucket in ccm-agent ensure too, through --server, keeping the value out of the output", func() {
		const canary = "kv-canary-ensure-5d1f"
		url := secretsBroker(canary)

		code, out, errOut := agent("ensure", "file", motd, "--content", "token=${ kvGet('secrets', 'motd.token') }\n",
			"--owner", "root", "--group", "root", "--mode", "0600", "--server", url)
		Expect(code).To(Equal(0), out+errOut)
		Expect(os.ReadFile(motd)).To(Equal([]byte("token=" + canary + "\n")))
		Expect(out + errOut).ToNot(ContainSubstring(canary))

		Expect(os.Remove(motd)).To(Succeed())
		code, out, errOut = agent("ensure", "file", motd, "--content", "token=${ kvGet('secrets', 'motd.token') }\n",
			"--owner", "root", "--group", "root", "--mode", "0600")
		Expect(code).To(Equal(1), out)
		Expect(errOut).To(ContainSubstring(`kvGet("secrets", "motd.token"): bucket "secrets": no NATS connection for kvGet: give --server URL or --context NAME`))
		Expect(motd).ToNot(BeAnExistingFile())
	})

	It("says which function, bucket and flag when there is no connection, and changes nothing", func() {
		code, out, errOut := agent("apply", m)
		Expect(code).To(Equal(1), out)
		Expect(errOut).To(ContainSubstring(`kvGet("secrets", "motd.token"): bucket "secrets": no NATS connection for kvGet: give --server URL or --context NAME (or set CCM_SERVER, NATS_URL or NATS_CONTEXT)`))
		Expect(motd).ToNot(BeAnExistingFile())
	})
})
