package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/ui"
)

// xssFact is a fact value that would run a script if a page did not
// escape it.
const xssFact = "<script>alert(1)</script>"

// chromium finds the browser make deps installs.
func chromium() string {
	GinkgoHelper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Fail("no chromium: make deps installs Debian's chromium package")
	return ""
}

// screenshotDir is where the page screenshots go: $CCM_UI_SCREENSHOTS
// (docs/ when refreshing the dashboard page's), else a temporary directory.
func screenshotDir() string {
	if d := os.Getenv("CCM_UI_SCREENSHOTS"); d != "" {
		return d
	}
	return GinkgoT().TempDir()
}

var _ = Describe("the dashboard in a real browser", Ordered, Label("browser"), func() {
	const hosts = 50
	var (
		fl      *fleettest.Fleet
		base    string
		browser context.Context
		dialogs atomic.Int32
		client  *orchestrator.Client
		dir     string
		shots   string
	)

	BeforeAll(func() {
		exe := chromium()
		fl = fleettest.StartWith(GinkgoT(), fleettest.Options{History: true}, hosts, map[string]any{"motto": xssFact}, "os=debian,rhel", "role=web,db")
		nc := fl.Connect(GinkgoT())
		srv, err := ui.New(nc, ui.Options{LiveInterval: 200 * time.Millisecond})
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { srv.Run(ctx); close(done) }()
		DeferCleanup(func() { cancel(); <-done })
		web := httptest.NewServer(srv)
		DeferCleanup(web.Close)
		base = web.URL
		client = orchestrator.New(fl.Connect(GinkgoT()))
		dir = GinkgoT().TempDir()
		shots = screenshotDir()

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

	// run runs browser steps with a deadline.
	run := func(steps ...chromedp.Action[chromedp.Void]) {
		GinkgoHelper()
		ctx, cancel := context.WithTimeout(browser, 30*time.Second)
		defer cancel()
		Expect(chromedp.Do(ctx, steps...)).To(Succeed())
	}
	// eval evaluates a JavaScript expression in the page.
	eval := func(expr string) any {
		GinkgoHelper()
		ctx, cancel := context.WithTimeout(browser, 30*time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[any](expr))
		Expect(err).NotTo(HaveOccurred(), expr)
		return v
	}
	expand := func(sel string) { GinkgoHelper(); expandDetails(browser, sel) }
	// text is an element's text, "" when it cannot be read (the page is
	// being replaced): callers compare it with what they expect, in
	// Eventually where the page may still change.
	text := func(sel string) string {
		ctx, cancel := context.WithTimeout(browser, 10*time.Second)
		defer cancel()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(s)
	}
	count := func(sel string) int { return countOf(browser, sel) }
	screenshot := func(name string) {
		GinkgoHelper()
		ctx, cancel := context.WithTimeout(browser, 30*time.Second)
		defer cancel()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: PNG (below: JPEG)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(shots, "ui-"+name+".png"), png, 0o644)).To(Succeed())
	}
	ensure := func(noop bool, content string) *orchestrator.Result {
		GinkgoHelper()
		e, err := protocol.NewEnsureRequest("file", map[string]any{
			"name": filepath.Join(dir, "{{ lookup('facts.identity') }}.conf"), "content": content,
			"owner": "root", "group": "root", "mode": "0644",
		})
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := client.Run(ctx, orchestrator.Request{Ensure: e, Noop: noop})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Replied).To(Equal(hosts))
		return res
	}

	It("shows every host of the registry with its count, live", func() {
		run(chromedp.Navigate(base + "/"))
		Eventually(func() string { return text("#count-hosts") }).WithTimeout(20 * time.Second).Should(Equal(strconv.Itoa(hosts)))
		Eventually(func() string { return text("#live") }).Should(Equal("live"))
		Expect(count("#hosts tbody tr.host")).To(Equal(hosts))
		screenshot("fleet")
	})

	It("filters with the CLI's --where language, errors shown inline", func() {
		run(chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#where")),
			chromedp.SetValue(chromedp.CSS("#where"), "os=debian"), chromedp.Submit(chromedp.CSS("#where")))
		Eventually(func() string { return text("#count-hosts") }).Should(Equal(strconv.Itoa(hosts / 2)))
		oses, ok := eval(`Array.from(document.querySelectorAll("#hosts tbody tr.host td:nth-child(2)")).map(td => td.textContent)`).([]any)
		Expect(ok).To(BeTrue())
		Expect(oses).To(HaveLen(hosts / 2))
		for _, os := range oses {
			Expect(os).To(Equal("debian"))
		}
		run(chromedp.Navigate(base + "/?where=" + "os%3D~%28"))
		Eventually(func() string { return text("#filter-error") }).Should(ContainSubstring("os=~("))

		// The --select expression, in its own box, judged by the same
		// parser as ccm-orch's.
		run(chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#select")),
			chromedp.SetValue(chromedp.CSS("#select"), "not (os=debian or os=ubuntu)"), chromedp.Submit(chromedp.CSS("#select")))
		Eventually(func() string { return text("#count-hosts") }).Should(Equal(strconv.Itoa(hosts / 2)))
		oses, ok = eval(`Array.from(document.querySelectorAll("#hosts tbody tr.host td:nth-child(2)")).map(td => td.textContent)`).([]any)
		Expect(ok).To(BeTrue())
		Expect(oses).To(HaveLen(hosts / 2))
		for _, os := range oses {
			Expect(os).To(Equal("rhel"))
		}
		screenshot("fleet-select")
		run(chromedp.Navigate(base + "/?select=" + "os%3Ddebian+and+%28"))
		Eventually(func() string { return text("#filter-error") }).Should(ContainSubstring("select expression"))
	})

	It("renders a fact holding a script as text, running nothing", func() {
		run(chromedp.Navigate(base + "/hosts/" + fl.Identities[0]))
		run(chromedp.WaitVisible(chromedp.CSS("#facts")))
		Eventually(func() string { return text("#facts") }).Should(ContainSubstring(xssFact))
		Expect(count("#facts script")).To(Equal(0))
		Expect(dialogs.Load()).To(BeZero(), "no alert ran")
	})

	It("shows a new run on the runs page without a reload", func() {
		run(chromedp.Navigate(base+"/runs"), chromedp.WaitVisible(chromedp.CSS("#count-runs")))
		eval(`window.ccmMarker = 42`)
		var before int
		Eventually(func() error { var err error; before, err = strconv.Atoi(text("#count-runs")); return err }).Should(Succeed())
		res := ensure(false, "managed\n")
		Eventually(func() int { return count(fmt.Sprintf(`tr.run[data-request=%q]`, res.RequestID)) }).WithTimeout(20 * time.Second).Should(Equal(1))
		Eventually(func() string { return text("#count-runs") }).Should(Equal(strconv.Itoa(before + 1)))
		Eventually(func() string { return text(fmt.Sprintf(`tr.run[data-request=%q] td.replied`, res.RequestID)) }).Should(Equal(strconv.Itoa(hosts)))
		Expect(eval(`window.ccmMarker || 0`)).To(BeEquivalentTo(42), "the page was updated in place, not reloaded")
		screenshot("runs")

		// Every host's record reaches the dashboard in its own time: the
		// run's page fills in live.
		run(chromedp.Navigate(base + "/runs/" + res.RequestID))
		Eventually(func() string { return text("#run-counts") }).WithTimeout(20 * time.Second).Should(ContainSubstring(fmt.Sprintf("%d changed", hosts)))
		expand("details.group summary")
		Eventually(func() int { return count("details.group[open] table.events tbody tr") }).Should(Equal(hosts))
		screenshot("run")
	})

	It("shows a tampered host drifted in the matrix", func() {
		tampered := fl.Identities[3]
		Expect(os.WriteFile(filepath.Join(dir, tampered+".conf"), []byte("tampered\n"), 0o644)).To(Succeed())
		res := ensure(true, "managed\n")
		Expect(res.Summary.Hosts.WouldChange).To(Equal(1))

		// The audit's run page shows how the tampered host differs.
		run(chromedp.Navigate(base + "/runs/" + res.RequestID))
		Eventually(func() string {
			// Open every group each time: a live update may have added one.
			eval(`document.querySelectorAll("details.group").forEach(d => d.open = true); 0`)
			return text("pre.unified")
		}).Should(And(ContainSubstring("-tampered"), ContainSubstring("+managed")))
		run(chromedp.Navigate(base + "/drift"))
		row := fmt.Sprintf(`#matrix tr[data-resource=%q]`, "file#"+filepath.Join(dir, "<host>.conf"))
		Eventually(func() any {
			return eval(fmt.Sprintf(`(document.querySelector(%q) || {dataset:{}}).dataset.count || ""`, row+` td[data-state="drifted"]`))
		}).WithTimeout(20 * time.Second).Should(Equal("1"))
		Eventually(func() string { return text(row + ` td[data-state="converged"] summary`) }).Should(Equal(strconv.Itoa(hosts - 1)))
		expand(row + ` td[data-state="drifted"] summary`)
		Eventually(func() string { return text(row + ` td[data-state="drifted"] .hosts`) }).Should(Equal(tampered))
		Expect(count("svg.chart rect.bar")).To(BeNumerically(">", 0))
		screenshot("drift")

		// The fleet page shows each host's last result.
		run(chromedp.Navigate(base + "/"))
		Eventually(func() string { return text(fmt.Sprintf(`tr.host[data-identity=%q] td:last-child`, tampered)) }).Should(Equal("would_change"))
		Eventually(func() string { return text(fmt.Sprintf(`tr.host[data-identity=%q] td:last-child`, fl.Identities[0])) }).Should(Equal("ok"))

		run(chromedp.Navigate(base + "/hosts/" + tampered))
		Eventually(func() string { return text("table.resources") }).Should(ContainSubstring("would_change"), "a table cell holds the outcome's token")
		screenshot("host")
	})

	It("shows an assignment's scheduled runs, and a CRITICAL health check in the matrix", func() {
		doc := fmt.Sprintf("ccm:\n  resources:\n    - file:\n        - %q:\n            content: \"ok\\n\"\n            owner: root\n            group: root\n            mode: \"0644\"\n            health_checks:\n              - name: always-critical\n                command: /bin/sh -c 'echo down; exit 2'\n",
			filepath.Join(dir, "{{ lookup('facts.identity') }}.health"))
		path := filepath.Join(dir, "health.yaml")
		Expect(os.WriteFile(path, []byte(doc), 0o600)).To(Succeed())
		m, err := manifest.Load(path)
		Expect(err).NotTo(HaveOccurred())
		bundle, err := manifest.NewBundle(m)
		Expect(err).NotTo(HaveOccurred())
		raw, err := json.Marshal(bundle)
		Expect(err).NotTo(HaveOccurred())
		flt, err := protocol.NewFilter([]string{"role=web"}, nil)
		Expect(err).NotTo(HaveOccurred())
		kp, err := nkeys.CreateUser()
		Expect(err).NotTo(HaveOccurred())
		_, err = client.Assign(context.Background(), &protocol.Assignment{Protocol: protocol.AssignmentProtocol, Name: "health",
			Filter: flt, Interval: protocol.Duration(time.Hour), Manifest: raw}, kp)
		Expect(err).NotTo(HaveOccurred())

		web := 0
		for _, f := range fl.Facts {
			if f["role"] == "web" {
				web++
			}
		}
		run(chromedp.Navigate(base + "/drift"))
		row := fmt.Sprintf(`#matrix tr[data-resource=%q]`, "file#"+filepath.Join(dir, "<host>.health"))
		Eventually(func() any {
			return eval(fmt.Sprintf(`(document.querySelector(%q) || {dataset:{}}).dataset.count || ""`, row+` td[data-state="critical"]`))
		}).WithTimeout(30*time.Second).Should(Equal(strconv.Itoa(web)), "every web host runs the assignment on its own")
		screenshot("drift")

		// The web hosts' scheduled runs are one row, beside the two
		// pushed runs.
		run(chromedp.Navigate(base + "/runs"))
		grouped := `tr.assignment-runs[data-assignment="health"]`
		// Read together inside Eventually: a live update may swap the page
		// between two reads (a node read as it is replaced reads empty).
		Eventually(func() []any {
			return []any{text(grouped + " .runs-count"), text(grouped + " .hosts-count"), count(grouped), count(`tr.run`)}
		}).Should(Equal([]any{strconv.Itoa(web), strconv.Itoa(web), 1, 2}), "the web hosts' runs in one row, beside the two pushed runs")
		Expect(text("#runs")).To(ContainSubstring("assignment health"), "scheduled runs are listed with their assignment")
		screenshot("runs")
	})

	It("shows each assignment's hosts by state on the assignments page, as ccm-orch status does", func() {
		web := 0
		for _, f := range fl.Facts {
			if f["role"] == "web" {
				web++
			}
		}
		run(chromedp.Navigate(base + "/assignments"))
		row := `#assignments tr.assignment[data-assignment="health"]`
		Eventually(func() any {
			return eval(fmt.Sprintf(`(document.querySelector(%q) || {dataset:{}}).dataset.count || ""`, row+` td[data-state="failed"]`))
		}).WithTimeout(30*time.Second).Should(Equal(strconv.Itoa(web)), "a CRITICAL health check fails the resource")
		rep, err := client.Status(context.Background(), orchestrator.StatusOptions{Assignment: "health"})
		Expect(err).NotTo(HaveOccurred())
		Expect(rep.Assignments[0].Counts).To(Equal(map[string]int{orchestrator.StateFailed: web}), "ccm-orch status says the same")
		Expect(text(row + " td.hosts-count")).To(Equal(strconv.Itoa(web)))
		screenshot("assignments")

		run(chromedp.Navigate(base + "/assignments/health"))
		Eventually(func() string { return text(`.state-group[data-state="failed"]`) }).Should(ContainSubstring("CRITICAL"))
		Eventually(func() int { return count(`#runs tr.run`) }).Should(Equal(web), "its own runs, one a row")
		screenshot("assignment")
	})

	It("filters the runs by outcome and puts the worst first", func() {
		run(chromedp.Navigate(base+"/runs"), chromedp.WaitVisible(chromedp.CSS("#outcome")),
			chromedp.SetValue(chromedp.CSS("#outcome"), "failed"), chromedp.Submit(chromedp.CSS("#outcome")))
		Eventually(func() int { return count(`tr.assignment-runs[data-assignment="health"]`) }).Should(Equal(1))
		Expect(count(`tr.run`)).To(Equal(0), "no pushed run failed")
		Expect(eval(`new URL(location.href).searchParams.get("outcome")`)).To(Equal("failed"))

		run(chromedp.Navigate(base + "/runs?order=worst"))
		Eventually(func() any {
			return eval(`(document.querySelector("#runs tbody tr") || {className: ""}).className`)
		}).Should(Equal("assignment-runs"), "the failing assignment first")
		run(chromedp.Navigate(base + "/runs?order=oldest"))
		Eventually(func() any {
			return eval(`(document.querySelector("#runs tbody tr") || {className: ""}).className`)
		}).Should(HavePrefix("run "), "the first pushed run first")
	})

	It("keeps a one-off command off the drift page", func() {
		e, err := protocol.NewEnsureRequest("exec", map[string]any{"name": "/bin/true"})
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := client.Run(ctx, orchestrator.Request{Ensure: e})
		Expect(err).NotTo(HaveOccurred())
		run(chromedp.Navigate(base + "/runs"))
		Eventually(func() int { return count(fmt.Sprintf(`tr.run[data-request=%q]`, res.RequestID)) }).WithTimeout(20 * time.Second).Should(Equal(1))
		run(chromedp.Navigate(base + "/drift"))
		Eventually(func() int { return count(`#matrix tbody tr`) }).Should(BeNumerically(">=", 2))
		Expect(text("#matrix")).NotTo(ContainSubstring("exec#"), "a command has no state to drift from")
		run(chromedp.Navigate(base + "/hosts/" + fl.Identities[0]))
		Eventually(func() string { return text("table.resources") }).Should(ContainSubstring("exec#/bin/true"), "the host's page still shows it")
	})

	It("shows a host's facts near the top of its page, and its assignments", func() {
		var web string
		for i, f := range fl.Facts {
			if f["role"] == "web" {
				web = fl.Identities[i]
				break
			}
		}
		run(chromedp.Navigate(base + "/hosts/" + web))
		run(chromedp.WaitVisible(chromedp.CSS("#keyfacts")))
		Expect(text("#keyfacts")).To(And(ContainSubstring("role"), ContainSubstring("web")))
		top := func(sel string) float64 {
			GinkgoHelper()
			v, ok := eval(fmt.Sprintf(`document.querySelector(%q).getBoundingClientRect().top`, sel)).(float64)
			Expect(ok).To(BeTrue(), sel)
			return v
		}
		Expect(top("#keyfacts")).To(BeNumerically("<", top("table.resources")))
		Expect(top("#facts")).To(BeNumerically("<", top("table.resources")))
		Expect(top("#keyfacts")).To(BeNumerically("<", 200), "on the first screen")
		Eventually(func() string { return text(`#host-assignments tr[data-assignment="health"]`) }).Should(ContainSubstring("failed"))
		screenshot("host")
	})
})
