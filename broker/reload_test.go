package broker_test

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/bcrypt"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
)

// asyncErrors collects a connection's asynchronous errors.
func asyncErrors() (nats.Option, chan error) {
	ch := make(chan error, 16)
	return nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case ch <- err:
		default:
		}
	}), ch
}

var _ = Describe("Broker authentication", func() {
	var (
		dir, authPath string
		alice, bob    brokertest.User
		b             *broker.Broker
	)
	writeAuth := func(doc string) {
		GinkgoHelper()
		tmp := authPath + ".tmp"
		Expect(os.WriteFile(tmp, []byte(doc), 0o600)).To(Succeed())
		Expect(os.Rename(tmp, authPath)).To(Succeed())
	}
	bothUsers := func() string {
		hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
		Expect(err).NotTo(HaveOccurred())
		return `users:
  - nkey: ` + alice.Public + `
    permissions:
      publish: {allow: ["alice.>"]}
      subscribe: {allow: ["alice.>", "_INBOX.>"], deny: ["alice.secret"]}
      allow_responses: true
  - nkey: ` + bob.Public + `
  - user: ops
    password: "` + string(hash) + `"
`
	}
	connectAs := func(u brokertest.User, opts ...nats.Option) (*nats.Conn, error) {
		o, err := nats.NkeyOptionFromSeed(u.SeedFile)
		Expect(err).NotTo(HaveOccurred())
		nc, err := nats.Connect(b.ClientURL(), append([]nats.Option{o}, opts...)...)
		if err == nil {
			DeferCleanup(nc.Close)
		}
		return nc, err
	}

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		authPath = filepath.Join(dir, "auth.yaml")
		alice, bob = brokertest.NewUser(GinkgoT(), dir), brokertest.NewUser(GinkgoT(), dir)
		writeAuth(bothUsers())
		b = brokertest.StartConfig(GinkgoT(), broker.Config{AuthFile: authPath})
	})

	It("admits only its users, with their permissions", func() {
		_, err := nats.Connect(b.ClientURL())
		Expect(err).To(MatchError(nats.ErrAuthorization))
		_, err = nats.Connect(b.ClientURL(), nats.UserInfo("ops", "wrong"))
		Expect(err).To(MatchError(nats.ErrAuthorization))
		ops := connect(b.ClientURL(), nats.UserInfo("ops", "s3cret"))
		stranger := brokertest.NewUser(GinkgoT(), dir)
		_, err = connectAs(stranger)
		Expect(err).To(MatchError(nats.ErrAuthorization))

		onErr, errs := asyncErrors()
		a, err := connectAs(alice, onErr)
		Expect(err).NotTo(HaveOccurred())
		_, err = a.SubscribeSync("bob.inbox")
		Expect(err).NotTo(HaveOccurred())
		Eventually(errs).Should(Receive(MatchError(ContainSubstring(`Permissions Violation for Subscription to "bob.inbox"`))))
		_, err = a.SubscribeSync("alice.secret")
		Expect(err).NotTo(HaveOccurred())
		Eventually(errs).Should(Receive(MatchError(ContainSubstring(`"alice.secret"`))))

		watch, err := ops.SubscribeSync("bob.>")
		Expect(err).NotTo(HaveOccurred())
		Expect(ops.Flush()).To(Succeed())
		Expect(a.Publish("bob.inbox", []byte("not allowed"))).To(Succeed())
		Eventually(errs).Should(Receive(MatchError(ContainSubstring(`Permissions Violation for Publish to "bob.inbox"`))))

		// allow_responses: alice answers a request although she may not
		// publish to the requester's inbox otherwise.
		svc, err := a.Subscribe("alice.svc", func(m *nats.Msg) { _ = m.Respond([]byte("pong")) })
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(svc.Unsubscribe)
		Expect(a.Flush()).To(Succeed())
		reply, err := ops.Request("alice.svc", []byte("ping"), 10*time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(reply.Data)).To(Equal("pong"))
		_, err = watch.NextMsg(200 * time.Millisecond)
		Expect(err).To(MatchError(nats.ErrTimeout), "bob's subjects got nothing from alice")
	})

	It("still provisions JetStream through its in-process connection", func() {
		nc, err := b.InProcessConn()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		DeferCleanup(cancel)
		_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "P", Subjects: []string{"p.>"}})
		Expect(err).NotTo(HaveOccurred())
		_, err = nats.Connect(b.ClientURL(), nats.UserInfo("ccm-broker-internal", "guess"))
		Expect(err).To(MatchError(nats.ErrAuthorization))
	})

	It("cuts off a removed user on Reload and keeps the others connected", func() {
		closed := make(chan struct{})
		a, err := connectAs(alice, nats.ReconnectWait(20*time.Millisecond), nats.MaxReconnects(-1),
			nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
		Expect(err).NotTo(HaveOccurred())
		bc, err := connectAs(bob)
		Expect(err).NotTo(HaveOccurred())
		ops := connect(b.ClientURL(), nats.UserInfo("ops", "s3cret"))

		writeAuth(`users:
  - nkey: ` + bob.Public + `
  - user: ops
    password: s3cret
`)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		DeferCleanup(cancel)
		Expect(b.Reload(ctx)).To(Succeed())

		Eventually(closed).WithTimeout(30*time.Second).Should(BeClosed(), "alice's connection gives up: every reconnect is refused")
		Expect(a.IsConnected()).To(BeFalse())
		_, err = connectAs(alice)
		Expect(err).To(MatchError(nats.ErrAuthorization))
		for _, nc := range []*nats.Conn{bc, ops} {
			Expect(nc.IsConnected()).To(BeTrue())
			Expect(nc.Stats().Reconnects).To(BeZero())
			Expect(nc.Flush()).To(Succeed())
		}
	})

	It("keeps the users it has when the file on Reload is invalid", func() {
		writeAuth("users: [{user: ops}]\n")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		DeferCleanup(cancel)
		err := b.Reload(ctx)
		Expect(err).To(MatchError(broker.ErrInvalidAuth))
		Expect(err.Error()).To(ContainSubstring(authPath))
		_, err = connectAs(alice)
		Expect(err).NotTo(HaveOccurred())
		connect(b.ClientURL(), nats.UserInfo("ops", "s3cret"))

		Expect(os.Remove(authPath)).To(Succeed())
		Expect(b.Reload(ctx)).To(MatchError(broker.ErrInvalidAuth))
		_, err = connectAs(bob)
		Expect(err).NotTo(HaveOccurred())
	})

	It("refuses to start with an invalid auth file, and to reload when stopped", func() {
		bad := filepath.Join(dir, "bad.yaml")
		Expect(os.WriteFile(bad, []byte("users: [{nkey: nope}]"), 0o600)).To(Succeed())
		nb, err := broker.New(broker.Config{Listen: "127.0.0.1:-1", StoreDir: GinkgoT().TempDir(), AuthFile: bad})
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		DeferCleanup(cancel)
		err = nb.Start(ctx)
		Expect(err).To(MatchError(broker.ErrInvalidAuth))
		Expect(err.Error()).To(And(ContainSubstring(bad), ContainSubstring("nope")))
		Expect(nb.ClientURL()).To(BeEmpty())
		Expect(nb.Reload(ctx)).To(MatchError(broker.ErrNotRunning))
	})
})

var _ = Describe("Broker Reload", func() {
	It("reloads a clustered broker without an auth file, keeping its routes", func() {
		self := freeAddr()
		a := brokertest.StartConfig(GinkgoT(), broker.Config{ServerName: "a",
			Cluster: broker.ClusterConfig{Name: "ccm", Listen: self, Routes: []string{"nats-route://" + self}}})
		route := a.RouteURL()
		nc := connect(a.ClientURL())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		DeferCleanup(cancel)
		Expect(a.Reload(ctx)).To(Succeed())
		Expect(a.RouteURL()).To(Equal(route))
		Expect(nc.Flush()).To(Succeed())
		Expect(nc.Stats().Reconnects).To(BeZero())
	})
})
