package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ccm-fleet/ccm/internal/schemacheck"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/ui"
)

// apiSchemas are the schema each API document is published with, by the
// path that answers it (with ID and NAME for a run, host or assignment).
var apiSchemas = map[string]string{
	"/api/v1/fleet":                       "ui/fleet.schema.json",
	"/api/v1/runs":                        "ui/runs.schema.json",
	"/api/v1/runs/ID":                     "result.schema.json",
	"/api/v1/hosts/ID":                    "ui/host.schema.json",
	"/api/v1/drift":                       "ui/drift.schema.json",
	"/api/v1/assignments":                 "status.schema.json",
	"/api/v1/assignments/NAME":            "status.schema.json",
	"/api/v1/runs?kind=pushed":            "ui/runs.schema.json",
	"/api/v1/fleet?order=seen":            "ui/fleet.schema.json",
	"/api/v1/fleet?select=not+role%3Dweb": "ui/fleet.schema.json",
	"/api/v1/drift?state=stale":           "ui/drift.schema.json",
	"/api/v1/services":                    "ui/services.schema.json",
}

const schemaBase = "https://github.com/ccm-fleet/ccm/schemas/"

// compileSchemas compiles the schemas the API documents use.
func compileSchemas() map[string]*jsonschema.Schema {
	GinkgoHelper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	names := map[string]bool{}
	for _, n := range apiSchemas {
		names[n] = true
	}
	out := map[string]*jsonschema.Schema{}
	for n := range names {
		f, err := os.Open(filepath.Join("..", "schemas", n))
		Expect(err).NotTo(HaveOccurred())
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		Expect(err).NotTo(HaveOccurred(), n)
		for _, ref := range schemacheck.Refs(doc) {
			Expect(ref).To(HavePrefix("#"), "%s: $ref %q leaves the file", n, ref)
		}
		Expect(c.AddResource(schemaBase+n, doc)).To(Succeed())
	}
	for n := range names {
		s, err := c.Compile(schemaBase + n)
		Expect(err).NotTo(HaveOccurred(), n)
		out[n] = s
	}
	return out
}

// assignWeb stores an assignment named name selecting role=web that keeps
// one file per host in dir (named so that no fact value is in its name).
func assignWeb(client *orchestrator.Client, name, dir string) {
	GinkgoHelper()
	doc := fmt.Sprintf("ccm:\n  resources:\n    - file:\n        - %q:\n            content: \"kept\\n\"\n            owner: root\n            group: root\n            mode: \"0644\"\n",
		filepath.Join(dir, "{{ lookup('facts.identity') }}."+name+"-kept"))
	path := filepath.Join(dir, name+".yaml")
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
	_, err = client.Assign(context.Background(), &protocol.Assignment{Protocol: protocol.AssignmentProtocol, Name: name,
		Filter: flt, Interval: protocol.Duration(time.Hour), Manifest: raw}, kp)
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("the dashboard's JSON API", Ordered, func() {
	const hosts = 6
	var (
		fl      *fleettest.Fleet
		client  *orchestrator.Client
		base    string
		dir     string
		schemas map[string]*jsonschema.Schema
		webs    []string
		pushed  *orchestrator.Result
		oneOff  *orchestrator.Result
		// docs keeps every document validated, by schema, for the stock
		// validator.
		docs = map[string][][]byte{}
	)

	get := func(path string) []byte {
		GinkgoHelper()
		resp, err := http.Get(base + path)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s: %s", path, body)
		Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"))
		return body
	}
	decode := func(b []byte) map[string]any {
		GinkgoHelper()
		var v map[string]any
		Expect(json.Unmarshal(b, &v)).To(Succeed())
		return v
	}
	run := func(typ string, props map[string]any) *orchestrator.Result {
		GinkgoHelper()
		e, err := protocol.NewEnsureRequest(typ, props)
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := client.Run(ctx, orchestrator.Request{Ensure: e})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Replied).To(Equal(hosts))
		return res
	}

	BeforeAll(func() {
		schemas = compileSchemas()
		fl = fleettest.StartWith(GinkgoT(), fleettest.Options{History: true}, hosts, nil, "os=debian,rhel", "role=web,db")
		for i, f := range fl.Facts {
			if f["role"] == "web" {
				webs = append(webs, fl.Identities[i])
			}
		}
		srv, err := ui.New(fl.Connect(GinkgoT()), ui.Options{LiveInterval: 100 * time.Millisecond})
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

		pushed = run("file", map[string]any{"name": filepath.Join(dir, "{{ lookup('facts.identity') }}.conf"),
			"content": "pushed\n", "owner": "root", "group": "root", "mode": "0644"})
		oneOff = run("exec", map[string]any{"name": "/bin/false"})
		assignWeb(client, "web", dir)
	})

	It("reports the assignments exactly as ccm-orch status computes them", func() {
		var api map[string]any
		Eventually(func(g Gomega) {
			api = decode(get("/api/v1/assignments"))
			g.Expect(api["assignments"]).To(HaveLen(1))
			as := api["assignments"].([]any)[0].(map[string]any)
			g.Expect(as["counts"]).To(Equal(map[string]any{"converged": float64(len(webs))}))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		rep, err := client.Status(context.Background(), orchestrator.StatusOptions{})
		Expect(err).NotTo(HaveOccurred())
		b, err := json.Marshal(rep)
		Expect(err).NotTo(HaveOccurred())
		cli := decode(b)
		delete(api, "time")
		delete(cli, "time")
		Expect(api).To(Equal(cli), "the dashboard's report and ccm-orch status's")

		one := decode(get("/api/v1/assignments/web"))
		delete(one, "time")
		Expect(one).To(Equal(cli))
		hosts := []string{}
		for _, h := range one["assignments"].([]any)[0].(map[string]any)["hosts"].([]any) {
			hosts = append(hosts, h.(map[string]any)["identity"].(string))
		}
		Expect(hosts).To(ConsistOf(webs))
	})

	It("groups an assignment's runs into one row, pushed runs one a row", func() {
		var rows []any
		Eventually(func(g Gomega) {
			rows = decode(get("/api/v1/runs"))["rows"].([]any)
			g.Expect(rows).To(HaveLen(3), "two pushed runs and one assignment")
		}).Should(Succeed())
		kinds := map[string]int{}
		for _, r := range rows {
			row := r.(map[string]any)
			kinds[row["kind"].(string)]++
			if row["kind"] == "scheduled" {
				as := row["assignment"].(map[string]any)
				Expect(as["name"]).To(Equal("web"))
				Expect(as["runs"]).To(BeEquivalentTo(len(webs)), "one run per web host")
				Expect(as["hosts"]).To(BeEquivalentTo(len(webs)))
				Expect(as["triggers"]).To(HaveKeyWithValue("change", BeEquivalentTo(len(webs))))
				Expect(row).NotTo(HaveKey("run"))
			} else {
				Expect(row["run"].(map[string]any)["request_id"]).To(BeElementOf(pushed.RequestID, oneOff.RequestID))
			}
		}
		Expect(kinds).To(Equal(map[string]int{"pushed": 2, "scheduled": 1}))

		one := decode(get("/api/v1/runs?assignment=web"))
		Expect(one["runs"]).To(BeEquivalentTo(len(webs)))
		for _, r := range one["rows"].([]any) {
			Expect(r.(map[string]any)["kind"]).To(Equal("scheduled"))
			Expect(r.(map[string]any)).To(HaveKey("run"), "an assignment's own runs, one a row")
		}
	})

	It("filters runs by kind, time and outcome, and sorts them", func() {
		ids := func(path string) []string {
			GinkgoHelper()
			var out []string
			for _, r := range decode(get(path))["rows"].([]any) {
				row := r.(map[string]any)
				if run, ok := row["run"].(map[string]any); ok {
					out = append(out, run["request_id"].(string))
				} else {
					out = append(out, "assignment "+row["assignment"].(map[string]any)["name"].(string))
				}
			}
			return out
		}
		Expect(ids("/api/v1/runs?kind=pushed")).To(Equal([]string{oneOff.RequestID, pushed.RequestID}), "newest first")
		Expect(ids("/api/v1/runs?kind=pushed&order=oldest")).To(Equal([]string{pushed.RequestID, oneOff.RequestID}))
		Expect(ids("/api/v1/runs?kind=scheduled")).To(Equal([]string{"assignment web"}))
		Expect(ids("/api/v1/runs?outcome=changed&kind=pushed")).To(Equal([]string{pushed.RequestID}))
		Expect(ids("/api/v1/runs?outcome=failed")).To(Equal([]string{oneOff.RequestID}), "/bin/false fails")
		Expect(ids("/api/v1/runs?order=worst")[0]).To(Equal(oneOff.RequestID), "the failed run first")
		Expect(ids("/api/v1/runs?since=1h")).To(HaveLen(3))
		Expect(ids("/api/v1/runs?since=7d&kind=pushed")).To(HaveLen(2))
		bad := decode(get("/api/v1/runs?since=yesterday"))
		Expect(bad["query"].(map[string]any)["error"]).To(ContainSubstring(`since "yesterday"`))
		Expect(bad["rows"]).To(BeEmpty())
	})

	It("keeps one-off commands off the drift page, and lists them on the runs page", func() {
		var drift map[string]any
		Eventually(func(g Gomega) {
			drift = decode(get("/api/v1/drift"))
			var refs []string
			for _, r := range drift["resources"].([]any) {
				refs = append(refs, r.(map[string]any)["resource"].(string))
			}
			g.Expect(refs).To(ContainElement("file#" + filepath.Join(dir, "<host>.conf")))
			g.Expect(refs).To(ContainElement("file#" + filepath.Join(dir, "<host>.web-kept")))
			g.Expect(refs).NotTo(ContainElement(ContainSubstring("exec#")), "the one-off exec is not a state")
		}).Should(Succeed())
		Expect(string(get("/api/v1/runs?kind=pushed"))).To(ContainSubstring(oneOff.RequestID))
		Expect(string(get("/api/v1/hosts/"+fl.Identities[0]))).To(ContainSubstring("exec#/bin/false"), "the host's own page still shows it")
	})

	It("filters the fleet with ccm-orch's --where terms and --select expression, ANDed, and names a bad expression", func() {
		var want []string
		for i, f := range fl.Facts {
			if (f["role"] == "web" && f["os"] == "debian") || f["os"] == "rhel" {
				if f["role"] != "db" || f["os"] != "rhel" {
					want = append(want, fl.Identities[i])
				}
			}
		}
		Expect(want).ToNot(BeEmpty())
		q := url.Values{"select": {"(role=web and os=debian) or os=rhel"}, "where": {"role!=db"}}
		var api map[string]any
		Eventually(func(g Gomega) {
			api = decode(get("/api/v1/fleet?" + q.Encode()))
			var got []string
			for _, h := range api["hosts"].([]any) {
				got = append(got, h.(map[string]any)["identity"].(string))
			}
			g.Expect(got).To(ConsistOf(want))
		}).Should(Succeed())
		Expect(api["select"]).To(Equal("(role=web and os=debian) or os=rhel"))
		Expect(api).ToNot(HaveKey("where_error"))

		api = decode(get("/api/v1/fleet?" + url.Values{"select": {"role=web and ("}}.Encode()))
		Expect(api["where_error"]).To(ContainSubstring("select"))
		Expect(api["matched"]).To(BeNumerically("==", len(fl.Identities)), "a filter that does not parse is not applied")
	})

	It("puts a host's facts and its assignments in its document", func() {
		h := decode(get("/api/v1/hosts/" + webs[0]))
		Expect(h["registered"]).To(BeTrue())
		Expect(h["facts"]).To(HaveKeyWithValue("role", "web"))
		Expect(h["assignments"]).To(ConsistOf(And(HaveKeyWithValue("name", "web"), HaveKeyWithValue("state", "converged"))))
		Expect(h["runs"]).To(HaveLen(3))
	})

	It("answers the run's document as ccm-orch history show does", func() {
		run, err := client.History(context.Background(), pushed.RequestID)
		Expect(err).NotTo(HaveOccurred())
		want, err := json.Marshal(run.Result)
		Expect(err).NotTo(HaveOccurred())
		Expect(decode(get("/api/v1/runs/" + pushed.RequestID))).To(Equal(decode(want)))
	})

	It("answers every document valid by its published schema, with Go's validator and offline with the stock one", func() {
		for path, schema := range apiSchemas {
			p := strings.NewReplacer("runs/ID", "runs/"+pushed.RequestID, "hosts/ID", "hosts/"+webs[0], "NAME", "web").Replace(path)
			body := get(p)
			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(body)))
			Expect(err).NotTo(HaveOccurred())
			Expect(schemas[schema].Validate(doc)).To(Succeed(), "%s against %s:\n%s", p, schema, body)
			docs[schema] = append(docs[schema], body)
		}
		pythons := schemacheck.Pythons()
		Expect(pythons).NotTo(BeEmpty(), "no python3 with jsonschema: install python3-jsonschema (make deps)")
		for _, py := range pythons {
			for _, schema := range slices.Sorted(maps.Keys(docs)) {
				path := filepath.Join("..", "schemas", schema)
				code, out, err := schemacheck.Validate(py, GinkgoT().TempDir(), path, docs[schema]...)
				Expect(err).NotTo(HaveOccurred())
				Expect(code).To(Equal(0), "%s -m jsonschema %s:\n%s", py, schema, out)
				spoiled, err := schemacheck.Spoil(docs[schema][0])
				Expect(err).NotTo(HaveOccurred())
				code, out, err = schemacheck.Validate(py, GinkgoT().TempDir(), path, spoiled)
				Expect(err).NotTo(HaveOccurred())
				Expect(code).NotTo(Equal(0), "%s accepted a spoiled document", schema)
				Expect(out).To(ContainSubstring(schemacheck.Canary))
			}
		}
	})

	It("is read-only and says so, and names what it does not have", func() {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			req, err := http.NewRequest(method, base+"/api/v1/fleet", strings.NewReader("{}"))
			Expect(err).NotTo(HaveOccurred())
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed), method)
			Expect(string(b)).To(ContainSubstring("read-only"))
		}
		for path, code := range map[string]int{"/api/v1/runs/nope": 404, "/api/v1/hosts/no-such-host": 404, "/api/v1/assignments/nope": 404, "/api/v1/other": 404, "/api/v1/hosts/a%2Fb": 400} {
			resp, err := http.Get(base + path)
			Expect(err).NotTo(HaveOccurred())
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(code), path)
			Expect(decode(b)).To(HaveKey("error"), path)
		}
	})

	It("counts its own requests per page, and their latency, on /metrics", func() {
		get("/api/v1/fleet")
		get("/api/v1/fleet")
		resp, err := http.Get(base + "/no/such/page")
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		resp, err = http.Get(base + "/metrics")
		Expect(err).NotTo(HaveOccurred())
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(err).NotTo(HaveOccurred())
		text := string(b)
		Expect(text).To(MatchRegexp(`(?m)^ccm_ui_requests_total\{code="200",page="api_fleet"\} ([3-9]|\d\d+)$`))
		Expect(text).To(MatchRegexp(`(?m)^ccm_ui_request_duration_seconds_count\{page="api_fleet"\} ([3-9]|\d\d+)$`))
		Expect(text).To(MatchRegexp(`(?m)^ccm_ui_requests_total\{code="404",page="other"\} 1$`))
		Expect(text).To(MatchRegexp(`(?m)^ccm_ui_hosts %d$`, hosts))
		Expect(text).To(ContainSubstring(`ccm_ui_requests_total{code="200",page="assignments"} 0`), "every page is there from the start")
		Expect(text).NotTo(ContainSubstring("/no/such/page"), "paths are not label values")
	})

	// The largest select expression the parser takes, 1,000 times at once:
	// every answer is the same, and the dashboard stays up; one byte more
	// is refused with its limit named.
	It("answers a burst of 1,000 fleet queries with the largest select expression, all alike", func() {
		terms := make([]string, protocol.MaxSelectTerms)
		for i := range terms {
			terms[i] = "role=web"
			if i%2 == 1 {
				terms[i] = "(not os=solaris)"
			}
		}
		expr := strings.Join(terms, " and ")
		Expect(len(expr)).To(BeNumerically("<=", protocol.MaxSelectLength))
		path := "/api/v1/fleet?select=" + url.QueryEscape(expr)
		want := decode(get(path))
		Expect(want["where_error"]).To(BeNil())
		Expect(want["matched"]).To(Equal(float64(len(webs))))

		const burst = 1000
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 2 * time.Minute}
		defer client.CloseIdleConnections()
		errs := make(chan error, burst)
		var wg sync.WaitGroup
		for range burst {
			wg.Go(func() {
				resp, err := client.Get(base + path)
				if err != nil {
					errs <- err
					return
				}
				defer resp.Body.Close()
				var got map[string]any
				if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
					errs <- err
					return
				}
				delete(got, "time")
				if resp.StatusCode != http.StatusOK || got["matched"] != want["matched"] || got["where_error"] != nil {
					errs <- fmt.Errorf("status %d, matched %v, error %v", resp.StatusCode, got["matched"], got["where_error"])
				}
			})
		}
		wg.Wait()
		close(errs)
		var failed []error
		for err := range errs {
			failed = append(failed, err)
		}
		Expect(failed).To(BeEmpty())

		long := decode(get("/api/v1/fleet?select=" + url.QueryEscape("role="+strings.Repeat("w", protocol.MaxSelectLength))))
		Expect(long["where_error"]).To(ContainSubstring("MaxSelectLength"))
		Expect(decode(get("/api/v1/fleet"))["total"]).To(Equal(float64(hosts)), "the dashboard still answers")
	})

	// The account types on the drift page: a fleet noop of a group the
	// hosts lack is listed as drift on every host (the simulated hosts
	// share this machine's account files, so only a noop is sent). Last:
	// it adds a run to every host.
	It("lists a group a fleet noop would create as drift on every host", func() {
		const grp = "ccm-ui-drift-grp9"
		Expect(exec.Command("getent", "group", grp).Run()).To(HaveOccurred(), "group %s exists on this machine", grp)
		e, err := protocol.NewEnsureRequest("group", map[string]any{"name": grp, "gid": 4712})
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := client.Run(ctx, orchestrator.Request{Ensure: e, Noop: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Replied).To(Equal(hosts))
		Eventually(func(g Gomega) {
			drift := decode(get("/api/v1/drift"))
			var row map[string]any
			for _, r := range drift["resources"].([]any) {
				if m := r.(map[string]any); m["resource"] == "group#"+grp {
					row = m
				}
			}
			g.Expect(row).NotTo(BeNil(), "group#%s on the drift page", grp)
			g.Expect(row["cells"]).To(ContainElement(And(HaveKeyWithValue("state", "drifted"), HaveKeyWithValue("count", float64(hosts)))))
		}).Should(Succeed())
		Expect(exec.Command("getent", "group", grp).Run()).To(HaveOccurred(), "the noop created the group")
	})
})
