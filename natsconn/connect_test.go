package natsconn_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/natsconn"
)

var _ = Describe("Connect", func() {
	var ctx context.Context

	BeforeEach(func() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		DeferCleanup(cancel)
		useConfigHome() // never read the real user's contexts
	})

	connect := func(opts natsconn.Options) *nats.Conn {
		GinkgoHelper()
		nc, err := natsconn.Connect(ctx, opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		return nc
	}

	It("connects and round-trips a message, with reconnect-forever settings", func() {
		b := brokertest.Start(GinkgoT())
		nc := connect(natsconn.Options{Servers: b.ClientURL(), Name: "ccm-test"})

		sub, err := nc.SubscribeSync("ccm.t")
		Expect(err).NotTo(HaveOccurred())
		Expect(nc.Publish("ccm.t", []byte("ping"))).To(Succeed())
		msg, err := sub.NextMsg(10 * time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(msg.Data)).To(Equal("ping"))

		Expect(nc.Opts.Name).To(Equal("ccm-test"))
		Expect(nc.Opts.MaxReconnect).To(Equal(-1))
		Expect(nc.Opts.AllowReconnect).To(BeTrue())
		Expect(nc.Opts.RetryOnFailedConnect).To(BeFalse())
		Expect(nc.Opts.CustomReconnectDelayCB).NotTo(BeNil())
	})

	It("reconnects after the broker restarts, and logs it", func() {
		b := brokertest.Start(GinkgoT())
		logs := gbytes.NewBuffer()
		log := slog.New(slog.NewTextHandler(logs, nil))

		responder := connect(natsconn.Options{Servers: b.ClientURL(), Name: "responder", Logger: log})
		_, err := responder.Subscribe("ccm.echo", func(m *nats.Msg) { _ = m.Respond(m.Data) })
		Expect(err).NotTo(HaveOccurred())
		Expect(responder.Flush()).To(Succeed())
		client := connect(natsconn.Options{Servers: b.ClientURL(), Name: "client", Logger: log})
		_, err = client.Request("ccm.echo", []byte("before"), 10*time.Second)
		Expect(err).NotTo(HaveOccurred())

		Expect(b.Restart(ctx)).To(Succeed())

		Eventually(func() uint64 { return client.Stats().Reconnects }).WithTimeout(30 * time.Second).
			Should(BeNumerically(">=", 1))
		Eventually(client.Status).WithTimeout(30 * time.Second).Should(Equal(nats.CONNECTED))
		Eventually(func() (string, error) {
			m, err := client.Request("ccm.echo", []byte("after"), time.Second)
			if err != nil {
				return "", err
			}
			return string(m.Data), nil
		}).WithTimeout(30 * time.Second).Should(Equal("after"))

		Expect(string(logs.Contents())).To(And(
			MatchRegexp(`level=WARN msg="NATS disconnected" servers=nats://127\.0\.0\.1:\d+ connection=client`),
			MatchRegexp(`level=INFO msg="NATS reconnected" servers=\S+ connection=client url=nats://127\.0\.0\.1:\d+`),
		))
	})

	It("logs a normal close at Info", func() {
		b := brokertest.Start(GinkgoT())
		logs := gbytes.NewBuffer()
		nc, err := natsconn.Connect(ctx, natsconn.Options{Servers: b.ClientURL(), Logger: slog.New(slog.NewTextHandler(logs, nil))})
		Expect(err).NotTo(HaveOccurred())
		nc.Close()
		Eventually(logs).Should(gbytes.Say(`level=INFO msg="NATS connection closed"`))
	})

	It("fails fast, naming the servers, when nothing listens", func() {
		addr := freeAddr()
		nc, err := natsconn.Connect(ctx, natsconn.Options{Servers: "nats://" + addr})
		Expect(nc).To(BeNil())
		Expect(err).To(MatchError(natsconn.ErrConnect))
		Expect(err).To(MatchError(nats.ErrNoServers))
		Expect(errors.Is(err, context.DeadlineExceeded)).To(BeFalse())
		Expect(err.Error()).To(Equal("cannot connect to NATS at nats://" + addr + ": nats: no servers available for connection"))
	})

	It("tries every server in a comma-separated list", func() {
		b := brokertest.Start(GinkgoT())
		nc := connect(natsconn.Options{Servers: "nats://" + freeAddr() + ", " + b.ClientURL()})
		Expect(nc.ConnectedUrl()).To(Equal(b.ClientURL()))
	})

	It("hides passwords in the error", func() {
		_, err := natsconn.Connect(ctx, natsconn.Options{Servers: "nats://admin:s3cret@" + freeAddr()})
		Expect(err).To(MatchError(natsconn.ErrConnect))
		Expect(err.Error()).To(ContainSubstring("nats://admin:xxxxx@127.0.0.1:"))
		Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
	})

	It("honours an already cancelled context", func() {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := natsconn.Connect(cctx, natsconn.Options{Servers: "nats://" + freeAddr()})
		Expect(err).To(MatchError(context.Canceled))
	})

	DescribeTable("bounds the dial and handshake by the context deadline",
		func(deadline time.Duration, lo, hi time.Duration) {
			b := brokertest.Start(GinkgoT())
			dctx := ctx
			if deadline > 0 {
				var cancel context.CancelFunc
				dctx, cancel = context.WithTimeout(ctx, deadline)
				DeferCleanup(cancel)
			}
			nc, err := natsconn.Connect(dctx, natsconn.Options{Servers: b.ClientURL()})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(nc.Close)
			Expect(nc.Opts.Timeout).To(And(BeNumerically(">", lo), BeNumerically("<=", hi)))
		},
		Entry("a short deadline shortens it", 3*time.Second, time.Duration(0), 3*time.Second),
		Entry("a long deadline keeps the default", time.Hour, natsconn.DefaultConnectTimeout-1, natsconn.DefaultConnectTimeout),
		Entry("no deadline keeps the default", time.Duration(0), natsconn.DefaultConnectTimeout-1, natsconn.DefaultConnectTimeout),
	)

	Describe("credentials", func() {
		var dir string
		BeforeEach(func() { dir = GinkgoT().TempDir() })

		It("authenticates with a creds file, and is refused with an untrusted one", func() {
			url, account := operatorServer()
			nc := connect(natsconn.Options{Servers: url, Creds: writeCreds(dir, account)})
			Expect(nc.Status()).To(Equal(nats.CONNECTED))

			stranger, err := nkeys.CreateAccount()
			Expect(err).NotTo(HaveOccurred())
			_, err = natsconn.Connect(ctx, natsconn.Options{Servers: url, Creds: writeCreds(dir, stranger)})
			Expect(err).To(MatchError(natsconn.ErrConnect))
			Expect(err.Error()).To(ContainSubstring("Authorization Violation"))
		})

		It("authenticates with an nkey seed file, and is refused with another", func() {
			seed, pub := writeSeed(dir)
			url := authServer(func(o *server.Options) { o.Nkeys = []*server.NkeyUser{{Nkey: pub}} })
			connect(natsconn.Options{Servers: url, NKey: seed})

			other, _ := writeSeed(dir)
			_, err := natsconn.Connect(ctx, natsconn.Options{Servers: url, NKey: other})
			Expect(err).To(MatchError(natsconn.ErrConnect))
			Expect(err.Error()).To(ContainSubstring("Authorization Violation"))
		})

		It("authenticates with a user and password, or a token", func() {
			url := authServer(func(o *server.Options) { o.Username, o.Password = "ccm", "pw" })
			connect(natsconn.Options{Servers: url, User: "ccm", Password: "pw"})
			_, err := natsconn.Connect(ctx, natsconn.Options{Servers: url, User: "ccm", Password: "wrong"})
			Expect(err).To(MatchError(natsconn.ErrConnect))

			url = authServer(func(o *server.Options) { o.Authorization = "s3cret" })
			connect(natsconn.Options{Servers: url, Token: "s3cret"})
		})

		DescribeTable("names the file it cannot use",
			func(opts func(dir string) natsconn.Options, want func(dir string) []string) {
				o := opts(dir)
				o.Servers = "nats://" + freeAddr() // never dialled: files are checked first
				nc, err := natsconn.Connect(ctx, o)
				Expect(nc).To(BeNil())
				Expect(err).To(MatchError(natsconn.ErrCredentials))
				for _, w := range want(dir) {
					Expect(err.Error()).To(ContainSubstring(w))
				}
			},
			Entry("a missing creds file",
				func(d string) natsconn.Options { return natsconn.Options{Creds: filepath.Join(d, "gone.creds")} },
				func(d string) []string { return []string{"creds " + filepath.Join(d, "gone.creds"), "no such file"} }),
			Entry("a creds file without a JWT",
				func(d string) natsconn.Options {
					Expect(os.WriteFile(filepath.Join(d, "bad.creds"), []byte("hello"), 0o600)).To(Succeed())
					return natsconn.Options{Creds: filepath.Join(d, "bad.creds")}
				},
				func(d string) []string {
					return []string{"creds " + filepath.Join(d, "bad.creds") + ": no valid user JWT"}
				}),
			Entry("a missing nkey seed",
				func(d string) natsconn.Options { return natsconn.Options{NKey: filepath.Join(d, "gone.nk")} },
				func(d string) []string { return []string{"nkey " + filepath.Join(d, "gone.nk")} }),
			Entry("creds and nkey together",
				func(d string) natsconn.Options { return natsconn.Options{Creds: "a.creds", NKey: "b.nk"} },
				func(string) []string { return []string{"creds a.creds and nkey b.nk are mutually exclusive"} }),
			Entry("a missing client certificate",
				func(d string) natsconn.Options {
					return natsconn.Options{TLSCert: filepath.Join(d, "c.pem"), TLSKey: filepath.Join(d, "k.pem")}
				},
				func(d string) []string {
					return []string{"tls cert " + filepath.Join(d, "c.pem") + " / key " + filepath.Join(d, "k.pem")}
				}),
			Entry("a certificate without key",
				func(d string) natsconn.Options { return natsconn.Options{TLSCert: "c.pem"} },
				func(string) []string { return []string{"tls cert c.pem given without a key"} }),
			Entry("a key without certificate",
				func(d string) natsconn.Options { return natsconn.Options{TLSKey: "k.pem"} },
				func(string) []string { return []string{"tls key k.pem given without a cert"} }),
			Entry("a missing CA file",
				func(d string) natsconn.Options { return natsconn.Options{TLSCA: filepath.Join(d, "ca.pem")} },
				func(d string) []string { return []string{"tls ca " + filepath.Join(d, "ca.pem"), "no such file"} }),
			Entry("a CA file that is not PEM",
				func(d string) natsconn.Options {
					Expect(os.WriteFile(filepath.Join(d, "ca.pem"), []byte("not a cert"), 0o600)).To(Succeed())
					return natsconn.Options{TLSCA: filepath.Join(d, "ca.pem")}
				},
				func(d string) []string {
					return []string{"tls ca " + filepath.Join(d, "ca.pem") + ": no PEM certificate found"}
				}),
		)
	})
})

var _ = Describe("reconnect backoff", func() {
	DescribeTable("waits between half and all of the capped exponential delay",
		func(attempts int, lo, hi time.Duration) {
			for range 200 {
				Expect(natsconn.ReconnectDelay(attempts)).To(And(
					BeNumerically(">=", lo), BeNumerically("<=", hi)))
			}
		},
		Entry("after the first failed pass", 1, 125*time.Millisecond, 250*time.Millisecond),
		Entry("after the second", 2, 250*time.Millisecond, 500*time.Millisecond),
		Entry("after the fifth", 5, 2*time.Second, 4*time.Second),
		Entry("after the sixth", 6, 4*time.Second, 8*time.Second),
		Entry("capped from the seventh", 7, 5*time.Second, 10*time.Second),
		Entry("capped far out", 1000, 5*time.Second, 10*time.Second),
	)
})
