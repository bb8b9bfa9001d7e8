package main

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/registration"
)

// CCM has "registration" in ccm itself (ccm registration init, query,
// watch, rm); ccm-agent has the same commands as ccm-orch.
var _ = Describe("ccm-agent registration", func() {
	It("creates the stream, lists an entry signed by its host's bound key, and removes it", func() {
		ctx := context.Background()
		b := brokertest.Start(GinkgoT())

		code, out, errOut := agent("registration", "init", "--max-age", "1m", "--server", b.ClientURL())
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(Equal("registration stream " + registration.DefaultStream + ": 1 replica, per-entry TTLs, expired entries' markers kept 1m0s\n"))

		nc, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		kp, err := nkeys.CreateUser()
		Expect(err).NotTo(HaveOccurred())
		signer, err := protocol.NewKeySigner(kp)
		Expect(err).NotTo(HaveOccurred())
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "web1", signer)).To(Succeed())
		e := &registration.Entry{Cluster: "production", Service: "web", Protocol: "http", Address: "10.0.0.1", Port: 80, Priority: 10, TTL: "1h", Host: "web1"}
		Expect(registration.Publish(ctx, js, e, signer)).To(Succeed())

		code, out, errOut = agent("registration", "query", "production", "--server", b.ClientURL())
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(Equal("web in production:\n  http://10.0.0.1:80 priority 10 ttl 1h host web1\n"))

		code, out, errOut = agent("reg", "rm", "--cluster", "production", "--service", "web", "--protocol", "http", "--address", "10.0.0.1", "--port", "80", "--force", "--server", b.ClientURL())
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(HavePrefix("removed "))

		code, out, _ = agent("registration", "query", "--server", b.ClientURL())
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("no registrations\n"))
	})

	It("is listed in --help with its subcommands and examples naming ccm-agent", func() {
		code, out, _ := agent("registration", "--help")
		Expect(code).To(Equal(0))
		for _, sub := range []string{"registration query", "registration watch", "registration rm", "registration unbind", "registration init"} {
			Expect(out).To(ContainSubstring(sub))
		}
		code, out, _ = agent("registration", "query", "--help")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("ccm-agent registration query production http web --json"))
		Expect(strings.Contains(out, "ccm-orch registration")).To(BeFalse())
	})
})
