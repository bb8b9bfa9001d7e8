package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/ui"
)

// contrastJS computes the WCAG contrast ratio of an element's text
// colour against its background colour (both opaque here).
const contrastJS = `(function (el) {
  function lum(c) {
    var v = c.match(/\d+(\.\d+)?/g).slice(0, 3).map(function (x) {
      x = Number(x) / 255;
      return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2];
  }
  var s = getComputedStyle(el), a = lum(s.color), b = lum(s.backgroundColor);
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
})(document.querySelector(%q))`

var _ = Describe("the dashboard's pages, round 3, in a real browser", Ordered, Label("browser"), func() {
	const hosts = 4
	var (
		fl      *fleettest.Fleet
		base    string
		browser context.Context
		client  *orchestrator.Client
		dir     string
		// audit is the audit run of the diff spec.
		audit *orchestrator.Result
	)

	BeforeAll(func() {
		fl = fleettest.StartWith(GinkgoT(), fleettest.Options{History: true}, hosts, nil, "os=debian", "role=web,db,cache,db")
		base = serveDashboard(fl.Connect(GinkgoT()), ui.Options{LiveInterval: 200 * time.Millisecond})
		client = orchestrator.New(fl.Connect(GinkgoT()))
		dir = GinkgoT().TempDir()
		browser = startChromium(1280, 600)
	})

	text := func(sel string) string { return browserText(browser, sel) }
	count := func(sel string) int { return countOf(browser, sel) }
	run := func(steps ...chromedp.Action[chromedp.Void]) { GinkgoHelper(); browse(browser, steps...) }
	eval := func(expr string) any {
		GinkgoHelper()
		v, err := evalIn[any](browser, expr)
		Expect(err).NotTo(HaveOccurred(), expr)
		return v
	}
	fileRequest := func(content string) *protocol.EnsureRequest {
		GinkgoHelper()
		e, err := protocol.NewEnsureRequest("file", map[string]any{
			"name": filepath.Join(dir, "{{ lookup('facts.identity') }}.conf"), "content": content,
			"owner": "root", "group": "root", "mode": "0644"})
		Expect(err).NotTo(HaveOccurred())
		return e
	}
	send := func(req orchestrator.Request) *orchestrator.Result {
		GinkgoHelper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := client.Run(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	hostRow := func(id string) string { return fmt.Sprintf(`#hosts tr.host[data-identity=%q]`, id) }

	It("shows a host's newest no reply on the fleet page, and filters by it", func() {
		first := send(orchestrator.Request{Ensure: fileRequest("managed\n")})
		Expect(first.Replied).To(Equal(hosts))
		silent := fl.Identities[1]
		// Both hosts are asked; the filter selects only the first, so the
		// other does not reply.
		res := send(orchestrator.Request{Ensure: fileRequest("managed\n"), Hosts: fl.Identities[:2],
			Filter: mustFilter("identity=" + fl.Identities[0]), Timeout: 2 * time.Second})
		Expect(res.NoReply).To(Equal([]string{silent}))

		run(chromedp.Navigate(base + "/"))
		Eventually(func() string { return text(hostRow(silent) + " td:last-child") }).WithTimeout(20 * time.Second).Should(Equal("no_reply"))
		Expect(eval(fmt.Sprintf(`document.querySelector(%q).getAttribute("href")`, hostRow(silent)+" td:last-child a"))).To(Equal("/runs/" + res.RequestID))
		Expect(text(hostRow(fl.Identities[0])+" td:last-child")).To(Equal("ok"), "it replied to the newest run")
		Expect(text(hostRow(fl.Identities[2])+" td:last-child")).To(Equal("changed"), "not asked since its first run")

		run(chromedp.Navigate(base + "/?last=no_reply"))
		Eventually(func() int { return count("#hosts tr.host") }).Should(Equal(1))
		Expect(eval(`document.querySelector("#hosts tr.host").dataset.identity`)).To(Equal(silent))
	})

	It("sorts a table by any column, facts included, with the keyboard too, saying so with aria-sort", func() {
		run(chromedp.Navigate(base + "/"))
		Eventually(func() int { return count("#hosts tr.host") }).Should(Equal(hosts))
		column := func(i int) []string {
			GinkgoHelper()
			v, err := evalIn[[]string](browser, fmt.Sprintf(`Array.from(document.querySelectorAll("#hosts tbody tr.host")).map(r => r.cells[%d].textContent.trim())`, i))
			Expect(err).NotTo(HaveOccurred())
			return v
		}
		roleButton := `#hosts thead th:nth-child(4) button`
		Expect(text(roleButton)).To(Equal("role"))
		Expect(eval(`document.querySelector("#hosts thead th:nth-child(4)").getAttribute("aria-sort")`)).To(Equal("none"))
		run(chromedp.Click(chromedp.CSS(roleButton)))
		Expect(eval(`document.querySelector("#hosts thead th:nth-child(4)").getAttribute("aria-sort")`)).To(Equal("ascending"))
		Expect(slices.IsSorted(column(3))).To(BeTrue(), "by role, ascending: %v", column(3))
		Expect(column(3)).NotTo(Equal(slices.Sorted(slices.Values(fl.Identities))), "role is not the identity order")

		// The keyboard: focus the header's button, press Enter.
		run(chromedp.Focus(chromedp.CSS(roleButton)), chromedp.KeyEvent(kb.Enter))
		Expect(eval(`document.querySelector("#hosts thead th:nth-child(4)").getAttribute("aria-sort")`)).To(Equal("descending"))
		roles := column(3)
		Expect(slices.IsSortedFunc(roles, func(a, b string) int { return strings.Compare(b, a) })).To(BeTrue(), "descending: %v", roles)
		Expect(eval(`document.activeElement.closest("th").textContent`)).To(HavePrefix("role"), "the focus stays on the header")

		// A live update keeps the sort.
		send(orchestrator.Request{Ensure: fileRequest("managed\n")})
		Eventually(func() []string { return column(7) }).WithTimeout(20 * time.Second).Should(HaveEach("ok"))
		Expect(column(3)).To(Equal(roles))
		Expect(eval(`document.querySelector("#hosts thead th:nth-child(4)").getAttribute("aria-sort")`)).To(Equal("descending"))

		// Sorted by identity, descending: the first button twice.
		run(chromedp.Click(chromedp.CSS(`#hosts thead th:nth-child(1) button`)), chromedp.Click(chromedp.CSS(`#hosts thead th:nth-child(1) button`)))
		want := slices.Sorted(slices.Values(fl.Identities))
		slices.Reverse(want)
		Expect(column(0)).To(Equal(want))
		Expect(eval(`document.querySelector("#hosts thead th:nth-child(4)").getAttribute("aria-sort")`)).To(Equal("none"))
		shoot(browser, screenshotDir(), "fleet-sorted")
	})

	It("colours a diff's added and removed lines, readable, keeping the + and - markers", func() {
		tampered := fl.Identities[2]
		Expect(os.WriteFile(filepath.Join(dir, tampered+".conf"), []byte("tampered\n"), 0o644)).To(Succeed())
		res := send(orchestrator.Request{Ensure: fileRequest("managed\n"), Noop: true})
		Expect(res.Summary.Hosts.WouldChange).To(Equal(1))
		audit = res

		run(chromedp.Navigate(base + "/runs/" + res.RequestID))
		// Read inside Eventually: a live update may swap the page between
		// two reads (a node read as it is replaced reads empty).
		Eventually(func() []string {
			eval(`document.querySelectorAll("details.group").forEach(d => d.open = true); 0`)
			return []string{text("pre.unified .line.add"), text("pre.unified .line.del")}
		}).Should(Equal([]string{"+managed", "-tampered"}))
		add := eval(`getComputedStyle(document.querySelector("pre.unified .line.add")).backgroundColor`)
		del := eval(`getComputedStyle(document.querySelector("pre.unified .line.del")).backgroundColor`)
		Expect(add).NotTo(Equal(del))
		Expect(add).NotTo(Equal(eval(`getComputedStyle(document.querySelector("pre.unified")).backgroundColor`)), "added lines are coloured")
		for _, sel := range []string{"pre.unified .line.add", "pre.unified .line.del", "pre.unified .line.hunk"} {
			Expect(eval(fmt.Sprintf(contrastJS, sel))).To(BeNumerically(">=", 4.5), "WCAG AA contrast of "+sel)
		}
		eval(`document.querySelector("details.group:has(pre.unified)").scrollIntoView(); 0`)
		shoot(browser, screenshotDir(), "diff")

		By("the host's runs mark the audit noop, as the other run lists do")
		run(chromedp.Navigate(base + "/hosts/" + tampered))
		row := fmt.Sprintf(`#timeline tr[data-request=%q]`, res.RequestID)
		Eventually(func() string { return text(row + " .tag") }).Should(Equal("noop"))
		Expect(count(`#timeline tr .tag`)).To(Equal(1), "only the audit")
	})

	It("opens and scrolls to the group a URL names", func() {
		Expect(audit).NotTo(BeNil(), "the audit of the spec before")
		res := audit
		Expect(len(res.Groups)).To(BeNumerically(">=", 2), "ok and would change")
		n := len(res.Groups)
		run(chromedp.Navigate(fmt.Sprintf("%s/runs/%s#group-%d", base, res.RequestID, n)))
		target := fmt.Sprintf("group-%d", n)
		Eventually(func() any { return eval(fmt.Sprintf(`document.getElementById(%q)?.open ?? false`, target)) }).Should(BeTrue())
		top := eval(fmt.Sprintf(`document.getElementById(%q).getBoundingClientRect().top`, target))
		Expect(top).To(And(BeNumerically(">=", 0), BeNumerically("<", eval(`window.innerHeight`))), "in view")
		Expect(eval(`document.querySelectorAll("details.group[open]").length`)).To(BeEquivalentTo(1), "only the named group is open")
		Expect(eval(fmt.Sprintf(`document.querySelector("#%s summary a.anchor").getAttribute("href")`, target))).To(Equal("#" + target))

		// Following a link to another group on the same page opens it too.
		run(chromedp.Navigate(fmt.Sprintf("%s/runs/%s#group-1", base, res.RequestID)))
		Eventually(func() any { return eval(`document.getElementById("group-1")?.open ?? false`) }).Should(BeTrue())
	})

	It("lists an assignment's runs with the host each ran on", func() {
		doc := fmt.Sprintf("ccm:\n  resources:\n    - file:\n        - %q:\n            content: \"motd\\n\"\n            owner: root\n            group: root\n            mode: \"0644\"\n",
			filepath.Join(dir, "{{ lookup('facts.identity') }}.motd"))
		path := filepath.Join(dir, "motd.yaml")
		Expect(os.WriteFile(path, []byte(doc), 0o600)).To(Succeed())
		m, err := manifest.Load(path)
		Expect(err).NotTo(HaveOccurred())
		bundle, err := manifest.NewBundle(m)
		Expect(err).NotTo(HaveOccurred())
		raw, err := json.Marshal(bundle)
		Expect(err).NotTo(HaveOccurred())
		kp, err := nkeys.CreateUser()
		Expect(err).NotTo(HaveOccurred())
		_, err = client.Assign(context.Background(), &protocol.Assignment{Protocol: protocol.AssignmentProtocol, Name: "motd",
			Filter: mustFilter("os=debian"), Interval: protocol.Duration(time.Hour), Manifest: raw}, kp)
		Expect(err).NotTo(HaveOccurred())

		run(chromedp.Navigate(base + "/assignments/motd"))
		Eventually(func() int { return count("#runs tr.run") }).WithTimeout(30 * time.Second).Should(Equal(hosts))
		Expect(text("#runs thead th:nth-child(3)")).To(Equal("host"))
		shown, err := evalIn[[]string](browser, `Array.from(document.querySelectorAll("#runs tr.run td.host a")).map(a => a.textContent)`)
		Expect(err).NotTo(HaveOccurred())
		Expect(shown).To(ConsistOf(fl.Identities), "each run names its host")
		Expect(eval(fmt.Sprintf(`document.querySelector("#runs tr.run td.host a[href='%s']") !== null`, "/hosts/"+fl.Identities[0]))).To(BeTrue())

		run(chromedp.Navigate(base + "/runs"))
		Eventually(func() int { return count(`tr.assignment-runs[data-assignment="motd"]`) }).Should(Equal(1))
		Expect(count("#runs thead th")).To(Equal(12), "rows of many hosts have no host column")
	})

	It("answers a page it does not have with the site's page, a clear message and a link home", func() {
		for path, msg := range map[string]string{
			"/no/such/page":                "There is no page at /no/such/page.",
			"/runs/aaaaaaaaaaaaaaaaaaaaaa": `no run "aaaaaaaaaaaaaaaaaaaaaa" in the history this dashboard holds`,
			"/hosts/ghost-1":               `no host "ghost-1" in the registry or the history this dashboard holds`,
		} {
			resp, err := http.Get(base + path)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Body.Close()).To(Succeed())
			Expect(resp.StatusCode).To(Equal(http.StatusNotFound), path)
			Expect(resp.Header.Get("Content-Type")).To(Equal("text/html; charset=utf-8"), path)

			run(chromedp.Navigate(base + path))
			Eventually(func() string { return text("#error-page h1") }).Should(Equal("Not found"), path)
			Expect(text("#error-message")).To(Equal(msg))
			Expect(eval(`document.title`)).To(Equal("Not found · CCM Fleet"))
			Expect(count("header nav a")).To(Equal(5), "the site's navigation")
		}
		shoot(browser, screenshotDir(), "not-found")
		run(chromedp.Click(chromedp.CSS("#error-home")))
		Eventually(func() string { return text("#count-hosts") }).Should(Equal(strconv.Itoa(hosts)), "the link leads home")

		resp, err := http.Get(base + "/api/v1/nope")
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Body.Close()).To(Succeed())
		Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"), "the API still answers JSON")
	})

	It("serves a small SVG favicon that every page links", func() {
		run(chromedp.Navigate(base + "/runs"))
		Expect(eval(`document.querySelector("link[rel=icon]").getAttribute("href")`)).To(Equal("/static/favicon.svg"))
		for _, path := range []string{"/static/favicon.svg", "/favicon.ico"} {
			resp, err := http.Get(base + path)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.StatusCode).To(Equal(http.StatusOK), path)
			Expect(resp.Header.Get("Content-Type")).To(Equal("image/svg+xml"), path)
			Expect(resp.ContentLength).To(BeNumerically("<", 2048), "small")
			Expect(resp.Body.Close()).To(Succeed())
		}
		// Chromium draws it: it loads as an image of its size.
		eval(`window.ccmIcon = -1; (i => { i.onload = () => { window.ccmIcon = i.naturalWidth }; i.src = "/static/favicon.svg" })(new Image()); 0`)
		Eventually(func() any {
			v, _ := evalIn[float64](browser, `window.ccmIcon`)
			return v
		}).Should(BeEquivalentTo(32))
	})
})

var _ = Describe("the dashboard's login page in a real browser", Label("browser"), func() {
	It("labels the token field visibly", func() {
		fl := fleettest.StartWith(GinkgoT(), fleettest.Options{History: true}, 1, nil)
		base := serveDashboard(fl.Connect(GinkgoT()), ui.Options{AuthToken: "label-canary-0123456789"})
		browser := startChromium(1280, 400)
		browse(browser, chromedp.Navigate(base+"/login"))
		Eventually(func() string { return browserText(browser, `label[for="token"]`) }).Should(Equal("Token"))
		label, err := evalIn[string](browser, `document.getElementById("token").labels[0].textContent`)
		Expect(err).NotTo(HaveOccurred())
		Expect(label).To(Equal("Token"), "the field's own label")
		visible, err := evalIn[bool](browser, `(r => r.width > 0 && r.height > 0)(document.querySelector("label[for=token]").getBoundingClientRect())`)
		Expect(err).NotTo(HaveOccurred())
		Expect(visible).To(BeTrue())
		icon, err := evalIn[string](browser, `document.querySelector("link[rel=icon]").getAttribute("href")`)
		Expect(err).NotTo(HaveOccurred())
		Expect(icon).To(Equal("/static/favicon.svg"))
	})
})
