package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/registration"
)

var _ = Describe("ccm-orch registration query and unbind", func() {
	It("lists entries by the host's bound key or the key --policy pins, counts the refused ones on stderr, and frees a name with unbind", func() {
		ctx := context.Background()
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		_, err = registration.EnsureStream(ctx, js, registration.DefaultStream, 1, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		signer := func() *protocol.KeySigner {
			kp, err := nkeys.CreateUser()
			Expect(err).NotTo(HaveOccurred())
			s, err := protocol.NewKeySigner(kp)
			Expect(err).NotTo(HaveOccurred())
			return s
		}
		bound, pinned := signer(), signer()
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "web1", bound)).To(Succeed())
		entry := func(addr string) *registration.Entry {
			return &registration.Entry{Cluster: "production", Service: "web", Protocol: "http", Address: addr, Port: 80, Priority: 10, TTL: "1h", Host: "web1"}
		}
		Expect(registration.Publish(ctx, js, entry("10.0.0.1"), bound)).To(Succeed())
		Expect(registration.Publish(ctx, js, entry("10.0.0.2"), pinned)).To(Succeed())

		code, out, errOut := orch("registration", "query", "--server", b.ClientURL())
		Expect(code).To(Equal(0), errOut)
		Expect(lines(out)).To(Equal([]string{"web in production:", "  http://10.0.0.1:80 priority 10 ttl 1h host web1"}))
		Expect(errOut).To(ContainSubstring("claims host web1 but is signed by " + pinned.PublicKey()))
		Expect(errOut).To(ContainSubstring("warning: 1 entry refused and not listed"))

		pol := filepath.Join(GinkgoT().TempDir(), "policy.yaml")
		Expect(os.WriteFile(pol, fmt.Appendf(nil, "registration:\n  services: [web]\n  publishers:\n    - {host: web1, public_key: %s}\n", pinned.PublicKey()), 0o600)).To(Succeed())
		code, out, errOut = orch("registration", "query", "--json", "--policy", pol, "--server", b.ClientURL())
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(And(ContainSubstring(`"address": "10.0.0.2"`), ContainSubstring(`"trust": "policy"`), Not(ContainSubstring("10.0.0.1"))))
		Expect(errOut).To(ContainSubstring("not by a key the policy's registration.publishers lists for it"))

		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "web1", pinned)).To(MatchError(registration.ErrHostBound))
		code, out, errOut = orch("registration", "unbind", "web1", "--force", "--server", b.ClientURL())
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(Equal("unbound web1\n"))
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "web1", pinned)).To(Succeed())
	})
})
