package ui_test

import (
	"context"
	"fmt"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
