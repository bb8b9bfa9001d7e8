package agent

import (
	"bufio"
	"context"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// mute is a NATS server that answers the connection's handshake and then
// nothing at all: every flush and request times out.
func mute() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).ToNot(HaveOccurred())
	DeferCleanup(l.Close)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Write([]byte(`INFO {"server_id":"mute","version":"2.15.2","proto":1,"headers":true,"max_payload":1048576}` + "\r\n"))
				r := bufio.NewReader(c)
				answered := false
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "PING") && !answered {
						answered = true // the connect's round trip only
						_, _ = c.Write([]byte("PONG\r\n"))
					}
				}
			}()
		}
	}()
	return "nats://" + l.Addr().String()
}

var _ = Describe("An agent whose broker never confirms its subscriptions", func() {
	It("stops with the reason instead of hanging with its registry entry kept fresh", func() {
		old := subscribeFlushTimeout
		subscribeFlushTimeout = 100 * time.Millisecond
		DeferCleanup(func() { subscribeFlushTimeout = old })
		nc, err := nats.Connect(mute(), nats.NoReconnect())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		reg, err := providers.Builtin(providers.Options{})
		Expect(err).ToNot(HaveOccurred())
		a, err := New(Config{Identity: "mute-1", StateDir: filepath.Join(GinkgoT().TempDir(), "state"), Insecure: true,
			HistoryTimeout: 200 * time.Millisecond, ShutdownTimeout: time.Second}, nc, engine.New(reg), nil)
		Expect(err).ToNot(HaveOccurred())
		done := make(chan error, 1)
		go func() { done <- a.Run(context.Background()) }()
		var runErr error
		Eventually(done).WithTimeout(30*time.Second).Should(Receive(&runErr), "Run returns")
		Expect(runErr).To(MatchError(ContainSubstring("agent mute-1: subscribe: the broker did not confirm the subscriptions in 600ms")))
	})
})
