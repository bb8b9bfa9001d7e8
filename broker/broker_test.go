package broker_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
)

// connect opens a client that the spec closes when it ends.
func connect(url string, opts ...nats.Option) *nats.Conn {
	GinkgoHelper()
	nc, err := nats.Connect(url, opts...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(nc.Close)
	return nc
}

// shutdown stops b within a generous bound.
func shutdown(b *broker.Broker) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return b.Shutdown(ctx)
}

var _ = Describe("Broker", func() {
	var ctx context.Context

	BeforeEach(func() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		DeferCleanup(cancel)
	})

	It("serves NATS clients and JetStream once started", func() {
		b := brokertest.Start(GinkgoT())
		Expect(b.ClientURL()).To(MatchRegexp(`^nats://127\.0\.0\.1:\d+$`))
		Expect(b.RouteURL()).To(BeEmpty())

		nc := connect(b.ClientURL())
		sub, err := nc.SubscribeSync("ccm.test")
		Expect(err).NotTo(HaveOccurred())
		Expect(nc.Publish("ccm.test", []byte("hello"))).To(Succeed())
		msg, err := sub.NextMsg(10 * time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(msg.Data)).To(Equal("hello"))

		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(filepath.Join(b.StoreDir(), "jetstream")).To(BeADirectory())
	})

	It("restarts on the same port and store, keeping JetStream data", func() {
		b := brokertest.Start(GinkgoT())
		url, store := b.ClientURL(), b.StoreDir()

		nc := connect(url)
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"keep.>"}, Storage: jetstream.FileStorage})
		Expect(err).NotTo(HaveOccurred())
		_, err = js.Publish(ctx, "keep.one", []byte("1"))
		Expect(err).NotTo(HaveOccurred())
		nc.Close()

		Expect(b.Restart(ctx)).To(Succeed())
		Expect(b.ClientURL()).To(Equal(url))
		Expect(b.StoreDir()).To(Equal(store))

		js2, err := jetstream.New(connect(url))
		Expect(err).NotTo(HaveOccurred())
		s, err := js2.Stream(ctx, "KEEP")
		Expect(err).NotTo(HaveOccurred())
		info, err := s.Info(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.State.Msgs).To(BeEquivalentTo(1))
	})

	It("creates a temporary store when none is configured and removes it on Shutdown", func() {
		b, err := broker.New(broker.Config{Listen: "127.0.0.1:0"})
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Start(ctx)).To(Succeed())
		DeferCleanup(shutdown, b)

		store := b.StoreDir()
		Expect(store).To(BeADirectory())
		Expect(b.ClientURL()).NotTo(BeEmpty())

		Expect(shutdown(b)).To(Succeed())
		_, err = os.Stat(store)
		Expect(os.IsNotExist(err)).To(BeTrue(), "store %s still exists", store)
		Expect(b.ClientURL()).To(BeEmpty())
		Expect(b.StoreDir()).To(BeEmpty())
	})

	It("keeps a configured store on Shutdown and can start again", func() {
		dir := filepath.Join(GinkgoT().TempDir(), "store")
		b, err := broker.New(broker.Config{Listen: "127.0.0.1:-1", StoreDir: dir})
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Start(ctx)).To(Succeed())
		DeferCleanup(shutdown, b)
		Expect(shutdown(b)).To(Succeed())
		Expect(filepath.Join(dir, "jetstream")).To(BeADirectory())

		Expect(b.Start(ctx)).To(Succeed())
		Expect(b.StoreDir()).To(Equal(dir))
	})

	It("refuses to start twice, to restart when stopped, and stops idempotently", func() {
		b, err := broker.New(broker.Config{Listen: "127.0.0.1:-1", StoreDir: GinkgoT().TempDir()})
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Restart(ctx)).To(MatchError(broker.ErrNotRunning))
		Expect(shutdown(b)).To(Succeed())

		Expect(b.Start(ctx)).To(Succeed())
		DeferCleanup(shutdown, b)
		Expect(b.Start(ctx)).To(MatchError(broker.ErrAlreadyRunning))
	})

	It("fails fast with the server's reason when the port is taken", func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(l.Close)

		b, err := broker.New(broker.Config{Listen: l.Addr().String(), StoreDir: GinkgoT().TempDir()},
			broker.WithReadyTimeout(time.Minute))
		Expect(err).NotTo(HaveOccurred())
		err = b.Start(ctx)
		Expect(err).To(MatchError(broker.ErrNotReady))
		Expect(err.Error()).To(ContainSubstring(l.Addr().String()))
		Expect(b.ClientURL()).To(BeEmpty())
	})

	It("names the TLS files it cannot load", func() {
		dir := GinkgoT().TempDir()
		cert, key := filepath.Join(dir, "missing.pem"), filepath.Join(dir, "missing-key.pem")
		b, err := broker.New(broker.Config{Listen: "127.0.0.1:-1", StoreDir: dir,
			TLS: broker.TLSConfig{Cert: cert, Key: key}})
		Expect(err).NotTo(HaveOccurred())
		err = b.Start(ctx)
		Expect(err).To(MatchError(broker.ErrInvalidConfig))
		Expect(err.Error()).To(ContainSubstring("tls cert " + cert))
	})

	It("runs until its context ends, then shuts down cleanly", func() {
		b, err := broker.New(broker.Config{Listen: "127.0.0.1:-1"})
		Expect(err).NotTo(HaveOccurred())
		rctx, cancel := context.WithCancel(ctx)
		DeferCleanup(cancel)
		done := make(chan error, 1)
		go func() { done <- b.Run(rctx) }()

		Eventually(b.ClientURL).ShouldNot(BeEmpty())
		store := b.StoreDir()
		connect(b.ClientURL())

		cancel()
		Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
		Expect(b.ClientURL()).To(BeEmpty())
		_, err = os.Stat(store)
		Expect(os.IsNotExist(err)).To(BeTrue())
	})

	It("logs its own events, and nats-server's only with server_log", func() {
		quiet := gbytes.NewBuffer()
		brokertest.Start(GinkgoT(), broker.WithLogger(slog.New(slog.NewTextHandler(quiet, nil))))
		Expect(string(quiet.Contents())).To(ContainSubstring("broker started"))
		Expect(string(quiet.Contents())).NotTo(ContainSubstring("nats-server"))

		loud := gbytes.NewBuffer()
		brokertest.StartConfig(GinkgoT(), broker.Config{ServerLog: true},
			broker.WithLogger(slog.New(slog.NewTextHandler(loud, nil))))
		Expect(string(loud.Contents())).To(And(
			ContainSubstring("component=nats-server"),
			ContainSubstring("Server is ready"),
		))
	})

	It("forms a cluster from the route settings", func() {
		routes := []string{"nats-route://" + freeAddr(), "nats-route://" + freeAddr()}
		listenOf := func(route string) string { return route[len("nats-route://"):] }
		a := brokertest.StartConfig(GinkgoT(), broker.Config{ServerName: "a",
			Cluster: broker.ClusterConfig{Name: "ccm", Listen: listenOf(routes[0]), Routes: routes}})
		Expect(a.RouteURL()).To(Equal(routes[0]))
		b := brokertest.StartConfig(GinkgoT(), broker.Config{ServerName: "b",
			Cluster: broker.ClusterConfig{Name: "ccm", Listen: listenOf(routes[1]), Routes: routes}})

		sub, err := connect(a.ClientURL()).SubscribeSync("ccm.cluster")
		Expect(err).NotTo(HaveOccurred())
		pub := connect(b.ClientURL())
		// Interest crosses the route asynchronously: publish until it arrives.
		Eventually(func() error {
			if err := pub.Publish("ccm.cluster", []byte("over the route")); err != nil {
				return err
			}
			_, err := sub.NextMsg(100 * time.Millisecond)
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())

		Expect(a.ClusterSize()).To(Equal(2), "its own route counts once")
		Eventually(a.JetStreamPeers).WithTimeout(30 * time.Second).Should(Equal(2))
	})

	It("counts a cluster's brokers from the routes, listed with or without its own", func() {
		self := freeAddr()
		peers := []string{"nats-route://" + freeAddr(), "nats-route://" + freeAddr()}
		withSelf := brokertest.StartConfig(GinkgoT(), broker.Config{ServerName: "s1",
			Cluster: broker.ClusterConfig{Name: "ccm", Listen: self, Routes: append([]string{"nats-route://" + self}, peers...)}})
		Expect(withSelf.ClusterSize()).To(Equal(3))
		without := brokertest.StartConfig(GinkgoT(), broker.Config{ServerName: "s2",
			Cluster: broker.ClusterConfig{Name: "ccm2", Listen: "127.0.0.1:-1", Routes: append(peers, peers[0])}})
		Expect(without.ClusterSize()).To(Equal(3), "duplicates count once")
		Expect(brokertest.Start(GinkgoT()).ClusterSize()).To(Equal(1))
	})

	It("restarts without JetStream and back, keeping the store, and opens in-process connections", func() {
		b := brokertest.Start(GinkgoT())
		nc, err := b.InProcessConn()
		Expect(err).NotTo(HaveOccurred())
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"keep.>"}, Storage: jetstream.FileStorage})
		Expect(err).NotTo(HaveOccurred())
		nc.Close()

		client := connect(b.ClientURL(), nats.ReconnectWait(50*time.Millisecond))
		Expect(b.RestartJetStream(ctx, false)).To(Succeed())
		Eventually(b.NumClients).Should(Equal(1), "the client reconnected")
		js2, err := jetstream.New(client)
		Expect(err).NotTo(HaveOccurred())
		_, err = js2.AccountInfo(ctx)
		Expect(err).To(MatchError(jetstream.ErrJetStreamNotEnabled))

		Expect(b.Restart(ctx)).To(Succeed())
		// Each try is bounded: a request sent while JetStream is still
		// starting gets no answer, and the next try must get its turn.
		Eventually(func() error {
			tctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, err := js2.Stream(tctx, "KEEP")
			return err
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})
})

// freeAddr returns a 127.0.0.1 address with a port that was free a moment ago.
func freeAddr() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}
