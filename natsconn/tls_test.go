package natsconn_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/url"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/natsconn"
)

var _ = Describe("Connect over TLS", func() {
	var (
		ctx   context.Context
		certs brokertest.PKI
	)

	BeforeEach(func() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		DeferCleanup(cancel)
		useConfigHome()
		certs = brokertest.WritePKI(GinkgoT(), GinkgoT().TempDir())
	})

	Context("with a TLS-only broker", func() {
		var b *broker.Broker

		BeforeEach(func() {
			b = brokertest.StartConfig(GinkgoT(), broker.Config{
				TLS: broker.TLSConfig{Cert: certs.ServerCert, Key: certs.ServerKey},
			})
			Expect(b.ClientURL()).To(HavePrefix("tls://127.0.0.1:"))
		})

		It("accepts a client that trusts the CA", func() {
			nc, err := natsconn.Connect(ctx, natsconn.Options{Servers: b.ClientURL(), TLSCA: certs.CA})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(nc.Close)
			Expect(nc.TLSRequired()).To(BeTrue())
			_, err = nc.TLSConnectionState()
			Expect(err).NotTo(HaveOccurred())

			sub, err := nc.SubscribeSync("ccm.tls")
			Expect(err).NotTo(HaveOccurred())
			Expect(nc.Publish("ccm.tls", []byte("secret"))).To(Succeed())
			msg, err := sub.NextMsg(10 * time.Second)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(msg.Data)).To(Equal("secret"))
		})

		It("takes the CA from a nats context", func() {
			home := useConfigHome()
			writeContext(home, "secure", map[string]any{"url": b.ClientURL(), "ca": certs.CA})
			nc, err := natsconn.Connect(ctx, natsconn.Options{Context: "secure"})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(nc.Close)
			Expect(nc.TLSRequired()).To(BeTrue())
		})

		It("refuses a client that does not trust the server certificate", func() {
			plainURL := "nats://" + hostPort(b.ClientURL())
			_, err := natsconn.Connect(ctx, natsconn.Options{Servers: plainURL})
			Expect(err).To(MatchError(natsconn.ErrConnect))
			Expect(err.Error()).To(ContainSubstring("certificate signed by unknown authority"))
		})

		It("refuses a plaintext NATS client", func() {
			conn, err := net.Dial("tcp", hostPort(b.ClientURL()))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(conn.Close)
			Expect(conn.SetDeadline(time.Now().Add(30 * time.Second))).To(Succeed())

			info, err := bufio.NewReader(conn).ReadString('\n')
			Expect(err).NotTo(HaveOccurred())
			Expect(info).To(And(HavePrefix("INFO "), ContainSubstring(`"tls_required":true`)))

			_, err = io.WriteString(conn, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n")
			Expect(err).NotTo(HaveOccurred())
			rest, err := io.ReadAll(conn)
			Expect(err).NotTo(HaveOccurred(), "the server closes the connection")
			Expect(string(rest)).NotTo(ContainSubstring("PONG"))
		})
	})

	Context("with a broker that verifies client certificates", func() {
		var b *broker.Broker

		BeforeEach(func() {
			b = brokertest.StartConfig(GinkgoT(), broker.Config{
				TLS: broker.TLSConfig{Cert: certs.ServerCert, Key: certs.ServerKey, CA: certs.CA, Verify: true},
			})
		})

		It("accepts a client with a certificate signed by the CA", func() {
			nc, err := natsconn.Connect(ctx, natsconn.Options{Servers: b.ClientURL(),
				TLSCA: certs.CA, TLSCert: certs.ClientCert, TLSKey: certs.ClientKey})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(nc.Close)
			Expect(nc.Status()).To(Equal(nats.CONNECTED))
		})

		It("refuses a client without a certificate", func() {
			_, err := natsconn.Connect(ctx, natsconn.Options{Servers: b.ClientURL(), TLSCA: certs.CA})
			Expect(err).To(MatchError(natsconn.ErrConnect))
			Expect(err.Error()).To(ContainSubstring(b.ClientURL()))
		})
	})
})

// hostPort returns the host:port of a URL.
func hostPort(raw string) string {
	GinkgoHelper()
	u, err := url.Parse(raw)
	Expect(err).NotTo(HaveOccurred())
	return u.Host
}
