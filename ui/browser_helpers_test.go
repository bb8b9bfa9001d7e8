package ui_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/ui"
)

// expandDetails opens the <details> whose summary sel names, as a reader
// does: by clicking it. Every dashboard page is live, and a live update may
// replace the page's main content between finding the summary and clicking
// it (the click then fails with "Could not find node"), so it clicks again
// until the group is open; a swap keeps an opened group open (live.js).
func expandDetails(browser context.Context, sel string) {
	GinkgoHelper()
	state := fmt.Sprintf(`document.querySelector(%q)?.closest("details")?.open ?? false`, sel)
	isOpen := func(ctx context.Context) bool {
		open, err := chromedp.Run(ctx, chromedp.Evaluate[bool](state))
		return err == nil && open
	}
	Eventually(func() bool {
		ctx, cancel := context.WithTimeout(browser, 10*time.Second)
		defer cancel()
		if isOpen(ctx) {
			return true
		}
		_ = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
		return isOpen(ctx)
	}).Should(BeTrue(), "open "+sel)
}

// countOf is how many elements of the page sel matches, or -1 when the page
// cannot be read (the browser is between two documents): a spec polling it
// in Eventually reads it again, and one comparing it at once fails with -1.
func countOf(browser context.Context, sel string) int {
	ctx, cancel := context.WithTimeout(browser, 10*time.Second)
	defer cancel()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	if err != nil {
		return -1
	}
	return n
}

// startChromium starts a headless Chromium of the given window size for
// one spec (or an Ordered container), stopped at its cleanup.
func startChromium(width, height int) context.Context {
	GinkgoHelper()
	exe := chromium()
	actx, acancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless, chromedp.WindowSize(width, height),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))...)
	DeferCleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	DeferCleanup(bcancel)
	Expect(chromedp.Do(bctx)).To(Succeed(), "start chromium")
	return bctx
}

// serveDashboard runs a dashboard over nc with opts and serves it over
// HTTP until the cleanup; it returns its base URL.
func serveDashboard(nc *nats.Conn, opts ui.Options) string {
	GinkgoHelper()
	srv, err := ui.New(nc, opts)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Run(ctx); close(done) }()
	DeferCleanup(func() { cancel(); <-done })
	web := httptest.NewServer(srv)
	DeferCleanup(web.Close)
	return web.URL
}

// browserText is an element's text, "" when it cannot be read (the page
// is being replaced): callers compare it with what they expect, in
// Eventually where the page may still change.
func browserText(browser context.Context, sel string) string {
	// A live update replaces the page's main content: a node read as it
	// is replaced fails the read, which is tried again on the new page.
	for range 3 {
		ctx, cancel := context.WithTimeout(browser, 10*time.Second)
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		cancel()
		if err == nil {
			return strings.TrimSpace(s)
		}
		if browser.Err() != nil {
			break
		}
	}
	return ""
}

// browse runs browser steps with a deadline.
func browse(browser context.Context, steps ...chromedp.Action[chromedp.Void]) {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(browser, 30*time.Second)
	defer cancel()
	Expect(chromedp.Do(ctx, steps...)).To(Succeed())
}

// evalIn evaluates a JavaScript expression in the page; a page being
// replaced is an error.
func evalIn[T any](browser context.Context, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(browser, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// shoot saves a full-page screenshot as ui-NAME.png in dir.
func shoot(browser context.Context, dir, name string) {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(browser, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "ui-"+name+".png"), png, 0o644)).To(Succeed())
}
