package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/ui"
)

// freePort is a loopback TCP port nothing listens on now.
func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var _ = Describe("the dashboard when its broker dies and comes back", Label("browser"), func() {
	const hosts = 5

	It("says it lost NATS, marks the host counts as of then, logs both ways and recovers without a restart", func() {
		fl := fleettest.StartWith(GinkgoT(), fleettest.Options{History: true, Listen: fmt.Sprintf("127.0.0.1:%d", freePort())}, hosts, nil, "os=debian")
		logs := gbytes.NewBuffer()
		base := serveDashboard(fl.Connect(GinkgoT()), ui.Options{LiveInterval: 200 * time.Millisecond,
			Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
		browser := startChromium(1280, 700)
		text := func(sel string) string { return browserText(browser, sel) }
		count := func(sel string) int { return countOf(browser, sel) }
		url := fl.URL()

		browse(browser, chromedp.Navigate(base+"/"))
		Eventually(func() string { return text("#count-online") }).WithTimeout(20 * time.Second).Should(Equal(strconv.Itoa(hosts)))
		Eventually(func() string { return text("#live") }).Should(Equal("live"))
		Expect(count("#nats-lost")).To(Equal(0))
		Expect(count("#counts-asof")).To(Equal(0))

		By("killing the broker under the running dashboard")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		Expect(fl.Broker.Shutdown(ctx)).To(Succeed())
		Eventually(func() string { return text("#live") }).WithTimeout(20*time.Second).Should(MatchRegexp(`^(reconnecting|disconnected) since \d\d:\d\d:\d\d UTC$`),
			"the badge is no longer a green live")
		Expect(evalIn[string](browser, `document.getElementById("live").className`)).To(Equal("live lost"))
		Eventually(func() string { return text("#nats-lost") }).Should(MatchRegexp(`The connection to NATS was lost at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \((reconnecting|disconnected)\): what this page shows is as of then\.`))
		Eventually(func() string { return text("#counts-asof") }).Should(MatchRegexp(`^host counts as of \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, when the connection to NATS was lost$`))
		Expect(text("#count-online")).To(Equal(strconv.Itoa(hosts)), "the hosts online when it was lost")
		Eventually(logs).Should(gbytes.Say(`level=WARN msg="ui: lost the connection to NATS; the pages show what was held then" state=reconnecting`))
		shoot(browser, screenshotDir(), "nats-lost")

		By("starting the broker again on the same port and store")
		Expect(fl.Broker.Start(ctx)).To(Succeed())
		Expect(fl.URL()).To(Equal(url))
		Eventually(func() string { return text("#live") }).WithTimeout(60 * time.Second).Should(Equal("live"))
		Eventually(func() int { return count("#nats-lost") }).Should(Equal(0))
		Expect(count("#counts-asof")).To(Equal(0))
		Eventually(logs).Should(gbytes.Say(`level=INFO msg="ui: the connection to NATS is back; the pages are current again" lost_for=\S+`))

		By("following the registry and the history again, without a restart")
		rec, err := json.Marshal(protocol.NodeRecord{Protocol: protocol.NodeProtocol, Identity: "latecomer-1",
			Facts: map[string]any{"os": "plan9"}, Version: "test", Started: time.Now(), LastSeen: time.Now()})
		Expect(err).NotTo(HaveOccurred())
		nc := fl.Connect(GinkgoT())
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			kv, err := jsstore.LookupRegistry(ctx, js)
			if err != nil {
				return err
			}
			_, err = kv.Put(ctx, "latecomer-1", rec)
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func() string { return text("#count-hosts") }).WithTimeout(30 * time.Second).Should(Equal(strconv.Itoa(hosts + 1)))

		client := orchestrator.New(nc)
		e, err := protocol.NewEnsureRequest("file", map[string]any{
			"name": filepath.Join(GinkgoT().TempDir(), "{{ lookup('facts.identity') }}.conf"), "content": "back\n",
			"owner": "root", "group": "root", "mode": "0644"})
		Expect(err).NotTo(HaveOccurred())
		var res *orchestrator.Result
		Eventually(func(g Gomega) {
			rctx, rcancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer rcancel()
			res, err = client.Run(rctx, orchestrator.Request{Ensure: e, Filter: mustFilter("os=debian")})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Replied).To(Equal(hosts), "the agents are back")
		}).WithTimeout(90 * time.Second).WithPolling(2 * time.Second).Should(Succeed())
		browse(browser, chromedp.Navigate(base+"/runs"))
		Eventually(func() string {
			return text(fmt.Sprintf(`tr.run[data-request=%q] td.replied`, res.RequestID))
		}).WithTimeout(30*time.Second).Should(Equal(strconv.Itoa(hosts)), "a run sent after the broker came back")
		Expect(text("#live")).To(Equal("live"))
	})
})

// mustFilter parses --where terms.
func mustFilter(terms ...string) *protocol.Filter {
	GinkgoHelper()
	f, err := protocol.NewFilter(terms, nil)
	Expect(err).NotTo(HaveOccurred())
	return f
}
