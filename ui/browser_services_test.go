package ui_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/ui"
)

var _ = Describe("the services page in a real browser", Ordered, Label("browser"), func() {
	var (
		base    string
		browser context.Context
		dialogs atomic.Int32
	)

	BeforeAll(func() {
		exe := chromium()
		// A fleet beside the services, so that the page is seen as it is
		// on a real broker (its registry and history present).
		fl := fleettest.StartWith(GinkgoT(), fleettest.Options{History: true}, 3, nil, "role=web,web,db")
		nc := fl.Connect(GinkgoT())
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		// The entries name hosts of their own (web1, web2, db1): the
		// fleet's identities are bound to the agents' own keys in the
		// node registry, and the page shows only entries signed by the
		// key trusted for the host they name.
		registered(context.Background(), js)
		srv, err := ui.New(nc, ui.Options{LiveInterval: 200 * time.Millisecond})
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { srv.Run(ctx); close(done) }()
		DeferCleanup(func() { cancel(); <-done })
		web := httptest.NewServer(srv)
		DeferCleanup(web.Close)
		base = web.URL

		actx, acancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless, chromedp.WindowSize(1280, 900),
			chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))...)
		DeferCleanup(acancel)
		bctx, bcancel := chromedp.NewContext(actx)
		DeferCleanup(bcancel)
		Expect(chromedp.Do(bctx)).To(Succeed(), "start chromium")
		Expect(chromedp.Listen(bctx, func(ev any) {
			if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
				dialogs.Add(1)
			}
		})).To(Succeed())
		browser = bctx
	})

	run := func(steps ...chromedp.Action[chromedp.Void]) {
		GinkgoHelper()
		ctx, cancel := context.WithTimeout(browser, 30*time.Second)
		defer cancel()
		Expect(chromedp.Do(ctx, steps...)).To(Succeed())
	}
	eval := func(expr string) any {
		GinkgoHelper()
		ctx, cancel := context.WithTimeout(browser, 30*time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[any](expr))
		Expect(err).NotTo(HaveOccurred(), expr)
		return v
	}
	count := func(sel string) int { return countOf(browser, sel) }

	It("shows the endpoints by cluster and service, an annotation's script as text, and filters them", func() {
		run(chromedp.Navigate(base+"/services"), chromedp.WaitVisible(chromedp.CSS("#services")))
		Expect(count("tr.endpoint")).To(Equal(5))
		Expect(count("tbody.service")).To(Equal(3))
		Expect(eval(`Array.from(document.querySelectorAll("tbody.service")).map(b => b.dataset.cluster + "/" + b.dataset.service).join(" ")`)).To(Equal("prod/db prod/web staging/web"))
		Expect(eval(`document.querySelector("td.annotations .annotation").textContent`)).To(Equal("note=" + scriptAnnotation))
		Expect(count("td.annotations script")).To(BeZero())
		Expect(eval(`document.querySelector("#count-dropped").textContent`)).To(Equal("1"))
		expandDetails(browser, "#dropped summary")
		run(chromedp.WaitVisible(chromedp.CSS("li.dropped-entry")))
		Expect(eval(`document.querySelector("li.dropped-entry .reason").textContent`)).To(HavePrefix("signed by "))
		Expect(dialogs.Load()).To(BeZero(), "no script ran")

		ctx, cancel := context.WithTimeout(browser, 30*time.Second)
		defer cancel()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(screenshotDir(), "ui-services.png"), png, 0o644)).To(Succeed())

		run(chromedp.SetValue(chromedp.CSS("#cluster"), "prod"), chromedp.SetValue(chromedp.CSS("#protocol"), "http"), chromedp.Submit(chromedp.CSS("#cluster")))
		// The filtered page replaces this one: read it until it is there
		// (a read while the page is replaced fails, and is read again).
		Eventually(func() string {
			ctx, cancel := context.WithTimeout(browser, 10*time.Second)
			defer cancel()
			v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.search + " " + Array.from(document.querySelectorAll("tr.endpoint")).map(r => r.dataset.endpoint).join(" ")`))
			if err != nil {
				return ""
			}
			return v
		}).Should(Equal("?cluster=prod&service=&protocol=http 10.0.0.1:80 10.0.0.2:80"))
		Expect(strings.TrimSpace(eval(`document.querySelector("a.here").textContent`).(string))).To(Equal("Services"))
	})
})
