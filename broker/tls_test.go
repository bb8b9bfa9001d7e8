package broker_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
)

var _ = Describe("Broker TLS", func() {
	var (
		dir string
		pki brokertest.PKI
	)
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		pki = brokertest.WritePKI(GinkgoT(), dir)
	})

	DescribeTable("refuses TLS files it cannot use, naming the file",
		func(mutate func(*broker.TLSConfig), want func(broker.TLSConfig) string) {
			t := broker.TLSConfig{Cert: pki.ServerCert, Key: pki.ServerKey, CA: pki.CA, Verify: true}
			mutate(&t)
			b, err := broker.New(broker.Config{Listen: "127.0.0.1:-1", StoreDir: dir, TLS: t})
			Expect(err).NotTo(HaveOccurred())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = b.Start(ctx)
			Expect(err).To(MatchError(broker.ErrInvalidConfig))
			Expect(err.Error()).To(ContainSubstring(want(t)))
			Expect(b.ClientURL()).To(BeEmpty())
		},
		Entry("unreadable cert", func(t *broker.TLSConfig) { t.Cert = filepath.Join(dir, "nope.pem") },
			func(t broker.TLSConfig) string { return "tls cert " + t.Cert }),
		Entry("a key as cert", func(t *broker.TLSConfig) { t.Cert = pki.ServerKey },
			func(t broker.TLSConfig) string { return "tls cert " + t.Cert + ": no PEM CERTIFICATE block" }),
		Entry("unreadable key", func(t *broker.TLSConfig) { t.Key = filepath.Join(dir, "nokey.pem") },
			func(t broker.TLSConfig) string { return "tls key " + t.Key }),
		Entry("key of another certificate", func(t *broker.TLSConfig) { t.Key = pki.ClientKey },
			func(t broker.TLSConfig) string { return "tls key " + t.Key + " does not match cert " + t.Cert }),
		Entry("CA file without certificates", func(t *broker.TLSConfig) { t.CA = pki.ServerKey },
			func(t broker.TLSConfig) string { return "tls ca " + t.CA }),
		Entry("unreadable CA", func(t *broker.TLSConfig) { t.CA = filepath.Join(dir, "noca.pem") },
			func(t broker.TLSConfig) string { return "tls ca " + t.CA }),
	)

	It("requires a CA with verify", func() {
		_, err := broker.New(broker.Config{TLS: broker.TLSConfig{Cert: pki.ServerCert, Key: pki.ServerKey, Verify: true}})
		Expect(err).To(MatchError(broker.ErrInvalidConfig))
		Expect(err.Error()).To(ContainSubstring("tls.ca: required with tls.verify"))
	})

	It("refuses plaintext clients and, with verify, clients without a certificate from the CA", func() {
		b := brokertest.StartConfig(GinkgoT(), broker.Config{TLS: broker.TLSConfig{
			Cert: pki.ServerCert, Key: pki.ServerKey, CA: pki.CA, Verify: true}})
		Expect(b.ClientURL()).To(HavePrefix("tls://"))
		plain := "nats://" + b.ClientURL()[len("tls://"):]
		_, err := nats.Connect(plain, nats.Timeout(5*time.Second))
		Expect(err).To(MatchError(ContainSubstring("tls: failed to verify certificate")), "nats.go moves to TLS, and cannot trust the server")

		_, err = nats.Connect(b.ClientURL(), nats.RootCAs(pki.CA), nats.Timeout(5*time.Second))
		Expect(err).To(HaveOccurred(), "no client certificate")

		other := brokertest.WritePKI(GinkgoT(), GinkgoT().TempDir())
		_, err = nats.Connect(b.ClientURL(), nats.RootCAs(pki.CA), nats.ClientCert(other.ClientCert, other.ClientKey), nats.Timeout(5*time.Second))
		Expect(err).To(HaveOccurred(), "a certificate of another CA")

		connect(b.ClientURL(), nats.RootCAs(pki.CA), nats.ClientCert(pki.ClientCert, pki.ClientKey))
	})

	It("reloads rotated certificates", func() {
		b := brokertest.StartConfig(GinkgoT(), broker.Config{TLS: broker.TLSConfig{Cert: pki.ServerCert, Key: pki.ServerKey}})
		fresh := brokertest.WritePKI(GinkgoT(), GinkgoT().TempDir())
		for _, f := range [][2]string{{fresh.ServerCert, pki.ServerCert}, {fresh.ServerKey, pki.ServerKey}} {
			data, err := os.ReadFile(f[0])
			Expect(err).NotTo(HaveOccurred())
			Expect(os.WriteFile(f[1], data, 0o600)).To(Succeed())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		DeferCleanup(cancel)
		Expect(b.Reload(ctx)).To(Succeed())
		connect(b.ClientURL(), nats.RootCAs(fresh.CA))
		pool := x509.NewCertPool()
		data, err := os.ReadFile(pki.CA)
		Expect(err).NotTo(HaveOccurred())
		pool.AppendCertsFromPEM(data)
		_, err = nats.Connect(b.ClientURL(), nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}), nats.Timeout(5*time.Second))
		Expect(err).To(HaveOccurred(), "the old CA no longer verifies the server")
	})
})
