package continuous_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
)

var _ = Describe("kvGet in the continuous agent", func() {
	It("reads this host's bucket for a local manifest", func() {
		ctx := context.Background()
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "config"})
		Expect(err).NotTo(HaveOccurred())
		_, err = kv.PutString(ctx, "motd", "kv-continuous-7d1e")
		Expect(err).NotTo(HaveOccurred())

		h := &harness{dir: GinkgoT().TempDir(), js: js}
		target := filepath.Join(h.dir, "motd")
		m := filepath.Join(h.dir, "m.yaml")
		Expect(os.WriteFile(m, []byte(fmt.Sprintf(`ccm:
  resources:
    - file:
        - %q:
            content: "${ kvGet('config', 'motd') }\n"
            owner: root
            group: root
            mode: "0600"
`, target)), 0o600)).To(Succeed())
		h.start(fmt.Sprintf("interval: 1h\nmanifests: [%s]\n", m), nil, 0)
		Eventually(func() (string, error) { b, err := os.ReadFile(target); return string(b), err }).WithTimeout(30 * time.Second).Should(Equal("kv-continuous-7d1e\n"))
	})
})
