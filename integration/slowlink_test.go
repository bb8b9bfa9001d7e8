package integration_test

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// slowLink is a TCP proxy to a broker that passes what the broker sends
// at most rate bytes a second, so a client's download is still under way
// when a spec needs it to be. When either side closes, both do: a broker
// that dies drops its clients at once, whatever the link still holds.
type slowLink struct {
	addr   string
	target string
	rate   int
	// down counts the bytes passed from the broker to clients.
	down atomic.Int64

	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startSlowLink listens on loopback for clients of target until the spec
// ends.
func startSlowLink(target string, rate int) *slowLink {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	l := &slowLink{addr: ln.Addr().String(), target: target, rate: rate, ln: ln, conns: map[net.Conn]struct{}{}}
	l.wg.Add(1)
	go l.accept()
	DeferCleanup(l.close)
	return l
}

// URL is the NATS URL clients use to reach the broker through the link.
func (l *slowLink) URL() string { return "nats://" + l.addr }

func (l *slowLink) accept() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", l.target, 2*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !l.track(c, up) {
			return
		}
		l.wg.Add(2)
		go l.pipe(up, c, nil)
		go l.pipe(c, up, &l.down)
	}
}

// track remembers a pair of connections; false once the link is closed.
func (l *slowLink) track(cs ...net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns == nil {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		l.conns[c] = struct{}{}
	}
	return true
}

// pipe copies from src to dst, throttled when counted (the broker's side);
// then closes both.
func (l *slowLink) pipe(dst, src net.Conn, counted *atomic.Int64) {
	defer l.wg.Done()
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 16<<10)
	if counted == nil {
		_, _ = io.CopyBuffer(dst, src, buf)
		return
	}
	chunk := min(len(buf), max(l.rate/20, 1))
	for {
		n, err := src.Read(buf[:chunk])
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			counted.Add(int64(n))
			time.Sleep(time.Duration(n) * time.Second / time.Duration(l.rate))
		}
		if err != nil {
			return
		}
	}
}

func (l *slowLink) close() {
	_ = l.ln.Close()
	l.mu.Lock()
	for c := range l.conns {
		_ = c.Close()
	}
	l.conns = nil
	l.mu.Unlock()
	l.wg.Wait()
}

var _ = Describe("the slow link used by fault specs", func() {
	It("passes the broker's bytes at about its rate and drops the client when the broker side closes", func() {
		srv, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		defer srv.Close()
		payload := make([]byte, 64<<10)
		serverDone := make(chan net.Conn, 1)
		go func() {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write(payload)
			serverDone <- c
		}()
		l := startSlowLink(srv.Addr().String(), 128<<10)
		c, err := net.Dial("tcp", l.addr)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		start := time.Now()
		got := make([]byte, len(payload))
		_, err = io.ReadFull(c, got)
		Expect(err).NotTo(HaveOccurred())
		// 64 KiB at 128 KiB/s: not before about half a second.
		Expect(time.Since(start)).To(BeNumerically(">=", 400*time.Millisecond))
		Eventually(l.down.Load).Should(BeEquivalentTo(len(payload)))

		var sc net.Conn
		Eventually(serverDone).Should(Receive(&sc))
		Expect(sc.Close()).To(Succeed())
		Expect(c.SetReadDeadline(time.Now().Add(5 * time.Second))).To(Succeed())
		_, err = c.Read(got)
		Expect(errors.Is(err, io.EOF)).To(BeTrue(), "read after the broker side closed: %v", err)
	})
})
