package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
)

var _ = Describe("ccm-orch history", Ordered, func() {
	var (
		fl     *fleettest.Fleet
		server []string
	)
	BeforeAll(func() {
		fl = fleettest.StartWith(GinkgoT(), fleettest.Options{History: true, Config: agent.Config{HistoryRetry: 100 * time.Millisecond}},
			fleetSize, nil, "os=debian,rhel", "role=web,db")
		server = []string{"--server", fl.URL()}
	})
	with := func(args ...string) []string { return append(args, server...) }

	// showJSON reads a request's result document back from history.
	showJSON := func(id string) (int, map[string]any) {
		code, out, errOut := orch(with("history", "show", id, "--json")...)
		var doc map[string]any
		if code == 0 || code == 2 || code == 3 {
			Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed(), errOut)
		}
		return code, doc
	}

	It("sends with --async, prints only the request id, and the replies land in history", func() {
		code, out, errOut := orch(with("ensure", "exec", "/bin/true", "--where", "os=debian", "--async")...)
		Expect(code).To(Equal(0), errOut)
		id := strings.TrimSpace(out)
		Expect(id).To(MatchRegexp(`^[a-z0-9]{20}$`))
		Eventually(func() any { _, doc := showJSON(id); return doc["replied"] }).Should(BeNumerically("==", fleetSize/2))
		code, doc := showJSON(id)
		Expect(code).To(Equal(0))
		Expect(doc).To(HaveKeyWithValue("async", true))
		Expect(doc).To(HaveKeyWithValue("discovery", "registry"))
	})

	It("refuses --async with --batch or --jsonl before sending anything", func() {
		code, _, errOut := orch(with("ensure", "exec", "/bin/true", "--async", "--batch", "2")...)
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("--async and --batch cannot be used together"))
		code, _, errOut = orch(with("ensure", "exec", "/bin/true", "--async", "--jsonl")...)
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("--async and --jsonl"))
	})

	It("shows a run as the live command printed it, with its exit code", func() {
		code, live, errOut := orch(with("ensure", "exec", "/bin/false", "--where", "role=db")...)
		Expect(code).To(Equal(2), errOut)
		id := regexpID.FindStringSubmatch(live)[1]
		code, out, _ := orch(with("history", "show", id)...)
		Expect(code).To(Equal(2))
		l := lines(out)
		Expect(l[0]).To(MatchRegexp(`^request ` + id + ` at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d by \S+@\S+: ensure exec#/bin/false where role=db$`))
		withoutElapsed := func(s string) string { return regexpElapsed.ReplaceAllString(s, "") }
		Expect(withoutElapsed(strings.Join(l[1:], "\n"))).To(Equal(withoutElapsed(strings.TrimSpace(live))))
	})

	It("lists recent requests newest first, by host and limited, with their host counts", func() {
		_, out, _ := orch(with("ensure", "exec", "/bin/true", "--host", "sim-0001", "--json")...)
		var doc map[string]any
		Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed())
		id := doc["request_id"].(string)

		code, out, errOut := orch(with("history", "list", "--json", "--limit", "2")...)
		Expect(code).To(Equal(0), errOut)
		var list []map[string]any
		Expect(json.Unmarshal([]byte(out), &list)).To(Succeed())
		Expect(list).To(HaveLen(2))
		Expect(list[0]).To(HaveKeyWithValue("request_id", id))
		Expect(list[0]).To(HaveKeyWithValue("asked", "ensure exec#/bin/true"))
		Expect(list[0]).To(HaveKeyWithValue("filter", "host=sim-0001"))
		Expect(list[0]).To(HaveKeyWithValue("hosts", HaveKeyWithValue("changed", BeNumerically("==", 1))))
		Expect(list[1]).To(HaveKeyWithValue("asked", "ensure exec#/bin/false"))
		Expect(list[1]).To(HaveKeyWithValue("hosts", HaveKeyWithValue("failed", BeNumerically("==", fleetSize/2))))

		code, out, _ = orch(with("history", "list", "--host", "sim-0003", "--json")...)
		Expect(code).To(Equal(0))
		list = nil
		Expect(json.Unmarshal([]byte(out), &list)).To(Succeed())
		for _, s := range list {
			Expect(s["request_id"]).NotTo(Equal(id), "sim-0003 was not part of it")
		}
		Expect(list).NotTo(BeEmpty())

		code, out, _ = orch(with("history", "list")...)
		Expect(code).To(Equal(0))
		l := lines(out)
		Expect(strings.Fields(l[0])).To(Equal([]string{"TIME", "REQUEST", "ASKED", "FILTER", "EXPECTED", "OK", "CHANGED", "WOULD", "CHANGE", "FAILED", "NO", "REPLY"}))
		Expect(l[1]).To(MatchRegexp(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+` + id + `\s+ensure exec#/bin/true\s+host=sim-0001\s+1\s+0\s+1\s+0\s+0\s+0$`))

		code, out, _ = orch(with("history", "list", "--since", "1s", "--host", "nobody")...)
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("no requests\n"))
	})

	It("counts hosts that would change apart from those that changed in history list", func() {
		code, out, errOut := orch(with("ensure", "exec", "/bin/true", "--noop", "--host", "sim-0002")...)
		Expect(code).To(Equal(5), errOut)
		Expect(out).To(ContainSubstring("0 changed, 1 would change"))
		m := regexp.MustCompile(`\(request ([a-z0-9]{20}),`).FindStringSubmatch(out)
		Expect(m).NotTo(BeNil(), out)
		// EXPECTED 1, OK 0, CHANGED 0, WOULD CHANGE 1, FAILED 0, NO REPLY 0,
		// once the host's record is in: the agent publishes it after its
		// reply, and a list read at once counted the host as no reply.
		Eventually(func() string {
			code, out, _ := orch(with("history", "list", "--host", "sim-0002")...)
			Expect(code).To(Equal(0))
			return out
		}).WithTimeout(30 * time.Second).Should(MatchRegexp(`(?m)^.*` + m[1] + `\s+ensure exec#/bin/true \(noop\)\s+host=sim-0002\s+1\s+0\s+0\s+1\s+0\s+0$`))
	})

	It("prints one host's timeline, failures named", func() {
		code, out, errOut := orch(with("history", "host", "sim-0004")...)
		Expect(code).To(Equal(0), errOut)
		l := lines(out)
		Expect(strings.Fields(l[0])).To(Equal([]string{"TIME", "REQUEST", "ASKED", "OUTCOME", "DURATION", "PROBLEM"}))
		Expect(out).To(MatchRegexp(`ensure exec#/bin/false\s+failed\s+\S+\s+exec#/bin/false: .*exit code 1`))

		code, out, _ = orch(with("history", "host", "sim-0004", "--json")...)
		Expect(code).To(Equal(0))
		var entries []map[string]any
		Expect(json.Unmarshal([]byte(out), &entries)).To(Succeed())
		Expect(entries).NotTo(BeEmpty())
		Expect(entries[len(entries)-1]).To(HaveKeyWithValue("outcome", "failed"))
	})

	It("exits 1 naming an unknown request", func() {
		code, _, errOut := orch(with("history", "show", "nosuchrequest")...)
		Expect(code).To(Equal(1))
		Expect(errOut).To(HavePrefix("ccm-orch: request nosuchrequest is unknown: history holds no request record and no host records for it; check the id"))
	})

	It("chooses discovery with --discovery", func() {
		for _, mode := range []string{"registry", "broadcast"} {
			code, out, errOut := orch(with("ensure", "exec", "/bin/true", "--where", "os=rhel", "--discovery", mode, "--json")...)
			Expect(code).To(Equal(0), errOut)
			var doc map[string]any
			Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed())
			Expect(doc).To(HaveKeyWithValue("discovery", mode))
			Expect(doc).To(HaveKeyWithValue("replied", BeNumerically("==", fleetSize/2)))
		}
		code, _, errOut := orch(with("discover", "--discovery", "registry", "--where", "host.info.x=1")...)
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("needs --discovery broadcast"))
	})
})

var _ = Describe("ccm-orch registration init", func() {
	It("creates the registration stream, again without change, and refuses limits that cannot be", func() {
		b := brokertest.Start(GinkgoT())
		code, out, errOut := orch("registration", "init", "--max-age", "10m", "--server", b.ClientURL())
		Expect(code).To(Equal(0), errOut)
		Expect(lines(out)).To(Equal([]string{"registration stream REGISTRATION: 1 replica, per-entry TTLs, expired entries' markers kept 10m0s"}))
		code, out, errOut = orch("registration", "init", "--max-age", "10m", "--server", b.ClientURL())
		Expect(code).To(Equal(0), errOut)
		Expect(lines(out)).To(HaveLen(1))
		code, _, errOut = orch("registration", "init", "--replicas", "0", "--server", b.ClientURL())
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("--replicas 0 must be between 1 and 5"))
		code, _, errOut = orch("registration", "init", "--replicas", "3", "--server", b.ClientURL())
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("REGISTRATION"))
	})
})

var _ = Describe("ccm-orch registration aliases", func() {
	It("takes CCM's aliases: reg and r for registration, q for query, delete for rm", func() {
		b := brokertest.Start(GinkgoT())
		code, out, errOut := orch("r", "init", "--server", b.ClientURL())
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(HavePrefix("registration stream REGISTRATION: "))
		code, full, errOut := orch("registration", "query", "*", "*", "web", "--json", "--server", b.ClientURL())
		Expect(code).To(Equal(0), errOut)
		for _, args := range [][]string{{"reg", "q"}, {"r", "query"}, {"registration", "q"}} {
			code, out, errOut = orch(append(args, "*", "*", "web", "--json", "--server", b.ClientURL())...)
			Expect(code).To(Equal(0), "%v: %s", args, errOut)
			Expect(out).To(Equal(full), "%v", args)
		}
		code, _, errOut = orch("reg", "delete", "--cluster", "production", "--service", "web", "--protocol", "http", "--address", "10.0.0.1", "--port", "80", "--force", "--server", b.ClientURL())
		Expect(code).To(Equal(0), errOut)
	})
})

var _ = Describe("ccm-orch history init", func() {
	It("creates the stream and the registry, updates them, and refuses what one server cannot keep", func() {
		b := brokertest.Start(GinkgoT())
		code, out, errOut := orch("history", "init", "--server", b.ClientURL())
		Expect(code).To(Equal(0), errOut)
		Expect(lines(out)).To(Equal([]string{
			"history stream CCM_HISTORY: 1 replica, records kept 30d, no size limit",
			"node registry CCM_NODES: 1 replica, entries expire 1m30s after their last heartbeat",
			"assignments CCM_ASSIGNMENTS: 1 replica, 64 revisions kept per assignment",
			"manifest bundles ccm-manifests: 1 replica",
			"registration stream REGISTRATION: 1 replica, per-entry TTLs, expired entries' markers kept 5m0s",
		}))
		code, out, _ = orch("history", "init", "--max-age", "36h", "--max-bytes", "1GiB", "--registry-ttl", "2m", "--server", b.ClientURL())
		Expect(code).To(Equal(0))
		Expect(lines(out)).To(Equal([]string{
			"history stream CCM_HISTORY: 1 replica, records kept 36h0m0s, at most 1073741824 bytes",
			"node registry CCM_NODES: 1 replica, entries expire 2m0s after their last heartbeat",
			"assignments CCM_ASSIGNMENTS: 1 replica, 64 revisions kept per assignment",
			"manifest bundles ccm-manifests: 1 replica",
			"registration stream REGISTRATION: 1 replica, per-entry TTLs, expired entries' markers kept 5m0s",
		}))
		code, _, errOut = orch("history", "init", "--replicas", "3", "--server", b.ClientURL())
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("CCM_HISTORY"))
		code, _, errOut = orch("history", "init", "--max-age", "soon", "--server", b.ClientURL())
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring(`--max-age: "soon": use a positive duration`))
	})

	It("says to run it when history is read before it was", func() {
		b := brokertest.Start(GinkgoT())
		code, _, errOut := orch("history", "list", "--server", b.ClientURL())
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("ccm-orch history init"))
	})
})

// regexpID finds the request id in a summary line; regexpElapsed the
// elapsed time after it.
var (
	regexpID      = regexp.MustCompile(`\(request ([a-z0-9]{20}), `)
	regexpElapsed = regexp.MustCompile(`, [0-9.]+[µmn]?s\)`)
)
