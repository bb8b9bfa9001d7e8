package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/internal/schemacheck"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/registration"
	"github.com/ccm-fleet/ccm/ui"
)

// scriptAnnotation is an annotation value that would run a script if the
// services page did not escape it.
const scriptAnnotation = "<script>alert('svc')</script>"

// newKeySigner is a signer with a fresh user key.
func newKeySigner() *protocol.KeySigner {
	GinkgoHelper()
	kp, err := nkeys.CreateUser()
	Expect(err).NotTo(HaveOccurred())
	s, err := protocol.NewKeySigner(kp)
	Expect(err).NotTo(HaveOccurred())
	return s
}

// registered publishes the services the specs read: two clusters, three
// services, five trusted endpoints, and one entry signed by a key other
// than the one its subject names. The hosts are web1, web2 and db1, or
// the three names given. It returns the dropped entry's subject.
func registered(ctx context.Context, js jetstream.JetStream, hosts ...string) string {
	GinkgoHelper()
	h := []string{"web1", "web2", "db1"}
	if len(hosts) == len(h) {
		h = hosts
	}
	_, err := registration.EnsureStream(ctx, js, registration.DefaultStream, 1, time.Hour)
	Expect(err).NotTo(HaveOccurred())
	web1, web2, db1, other := newKeySigner(), newKeySigner(), newKeySigner(), newKeySigner()
	for i, s := range []*protocol.KeySigner{web1, web2, db1} {
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, h[i], s)).To(Succeed())
	}
	for _, p := range []struct {
		e *registration.Entry
		s *protocol.KeySigner
	}{
		{&registration.Entry{Cluster: "prod", Service: "web", Protocol: "http", Address: "10.0.0.1", Port: 80, Priority: 10, TTL: "1h", Host: h[0],
			Annotations: map[string]string{"note": scriptAnnotation, "zone": "a"}}, web1},
		{&registration.Entry{Cluster: "prod", Service: "web", Protocol: "http", Address: "10.0.0.2", Port: 80, Priority: 20, TTL: "1h", Host: h[1]}, web2},
		{&registration.Entry{Cluster: "prod", Service: "web", Protocol: "https", Address: "10.0.0.2", Port: 443, Priority: 20, TTL: "1h", Host: h[1]}, web2},
		{&registration.Entry{Cluster: "prod", Service: "db", Protocol: "postgres", Address: "10.0.1.1", Port: 5432, Priority: 1, TTL: "never", Host: h[2]}, db1},
		{&registration.Entry{Cluster: "staging", Service: "web", Protocol: "http", Address: "fe80::1", Port: 8080, Priority: 5, Host: h[0]}, web1},
	} {
		Expect(registration.Publish(ctx, js, p.e, p.s)).To(Succeed())
	}
	// A validly signed entry of another key, copied to web1's subject.
	forged := &registration.Entry{Cluster: "prod", Service: "web", Protocol: "http", Address: "10.0.0.66", Port: 80, Priority: 1, TTL: "1h", Host: h[0]}
	msg, err := registration.NewMsg(forged, other)
	Expect(err).NotTo(HaveOccurred())
	msg.Subject = forged.PublisherSubject(web1.PublicKey())
	_, err = js.PublishMsg(ctx, msg)
	Expect(err).NotTo(HaveOccurred())
	return msg.Subject
}

// endpointLine is one endpoint as a line of text, the same from the page
// and from the API document.
func endpointLine(cluster, service, host, protocolName, endpoint, priority, ttl, annotations string) string {
	return strings.Join([]string{cluster, service, host, protocolName, endpoint, priority, ttl, annotations}, " | ")
}

var (
	serviceBody = regexp.MustCompile(`(?s)<tbody class="service" data-cluster="([^"]*)" data-service="([^"]*)">(.*?)</tbody>`)
	endpointRow = regexp.MustCompile(`(?s)<tr class="endpoint"[^>]*>(.*?)</tr>`)
	cell        = regexp.MustCompile(`(?s)<td class="([a-z]+)"[^>]*>(.*?)</td>`)
	tag         = regexp.MustCompile(`<[^>]*>`)
)

// pageEndpoints are the endpoint lines of a services page, in its order.
func pageEndpoints(page string) []string {
	var out []string
	for _, b := range serviceBody.FindAllStringSubmatch(page, -1) {
		for _, row := range endpointRow.FindAllStringSubmatch(b[3], -1) {
			cells := map[string]string{}
			for _, c := range cell.FindAllStringSubmatch(row[1], -1) {
				cells[c[1]] = html.UnescapeString(strings.TrimSpace(tag.ReplaceAllString(c[2], " ")))
			}
			ann := strings.Join(strings.Fields(cells["annotations"]), " ")
			out = append(out, endpointLine(html.UnescapeString(b[1]), html.UnescapeString(b[2]), cells["host"], cells["protocol"], cells["addr"], cells["priority"], cells["ttl"], ann))
		}
	}
	return out
}

// servicesDoc is the part of the API document the specs compare.
type servicesDoc struct {
	StreamExists bool `json:"stream_exists"`
	Services     int  `json:"services"`
	Endpoints    int  `json:"endpoints"`
	Clusters     []struct {
		Cluster  string `json:"cluster"`
		Services []struct {
			Service   string `json:"service"`
			Endpoints []struct {
				Host        string            `json:"host"`
				Protocol    string            `json:"protocol"`
				Endpoint    string            `json:"endpoint"`
				Priority    int               `json:"priority"`
				TTL         string            `json:"ttl"`
				AgeSeconds  int64             `json:"age_seconds"`
				Published   time.Time         `json:"published"`
				Annotations map[string]string `json:"annotations"`
			} `json:"endpoints"`
		} `json:"services"`
	} `json:"clusters"`
	Dropped        int                    `json:"dropped"`
	DroppedEntries []registration.Skipped `json:"dropped_entries"`
}

// lines are the endpoint lines of an API document, in its order.
func (d servicesDoc) lines() []string {
	var out []string
	for _, c := range d.Clusters {
		for _, s := range c.Services {
			for _, e := range s.Endpoints {
				var ann []string
				for k, v := range e.Annotations {
					ann = append(ann, k+"="+v)
				}
				sort.Strings(ann)
				ttl := e.TTL
				if ttl == "" {
					ttl = "-"
				}
				out = append(out, endpointLine(c.Cluster, s.Service, e.Host, e.Protocol, e.Endpoint, itoa(e.Priority), ttl, strings.Join(ann, " ")))
			}
		}
	}
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

var _ = Describe("the services page", func() {
	var (
		ctx    = context.Background()
		js     jetstream.JetStream
		nc     *nats.Conn
		base   string
		forged string
	)

	serve := func(opts ui.Options) string {
		GinkgoHelper()
		srv, err := ui.New(nc, opts)
		Expect(err).NotTo(HaveOccurred())
		web := httptest.NewServer(srv)
		DeferCleanup(web.Close)
		return web.URL
	}
	get := func(path string) (int, string) {
		GinkgoHelper()
		resp, err := http.Get(base + path)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, string(body)
	}
	doc := func(path string) (servicesDoc, []byte) {
		GinkgoHelper()
		code, body := get(path)
		Expect(code).To(Equal(http.StatusOK), body)
		var d servicesDoc
		Expect(json.Unmarshal([]byte(body), &d)).To(Succeed())
		return d, []byte(body)
	}

	BeforeEach(func() {
		b := brokertest.Start(GinkgoT())
		var err error
		nc, err = nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err = jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		base = serve(ui.Options{})
	})

	It("says there is nothing when the broker has no registration stream, and when the stream is empty, without an error", func() {
		code, page := get("/services")
		Expect(code).To(Equal(http.StatusOK))
		Expect(page).To(ContainSubstring(`id="services-empty"`))
		Expect(page).To(ContainSubstring("no <code>REGISTRATION</code> stream"))
		Expect(page).NotTo(ContainSubstring(`class="problem"`))
		d, _ := doc("/api/v1/services")
		Expect(d.StreamExists).To(BeFalse())
		Expect(d.Clusters).To(BeEmpty())

		_, err := registration.EnsureStream(ctx, js, registration.DefaultStream, 1, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		code, page = get("/services")
		Expect(code).To(Equal(http.StatusOK))
		Expect(page).To(ContainSubstring("No services are registered."))
		d, _ = doc("/api/v1/services")
		Expect(d.StreamExists).To(BeTrue())
		Expect(d.Endpoints).To(BeZero())
	})

	Context("with services registered", func() {
		BeforeEach(func() { forged = registered(ctx, js) })

		It("lists exactly the trusted endpoints, by cluster and service, and counts the dropped one with its reason", func() {
			code, page := get("/services")
			Expect(code).To(Equal(http.StatusOK))
			Expect(pageEndpoints(page)).To(Equal([]string{
				"prod | db | db1 | postgres | 10.0.1.1:5432 | 1 | never | ",
				"prod | web | web1 | http | 10.0.0.1:80 | 10 | 1h | note=" + scriptAnnotation + " zone=a",
				"prod | web | web2 | http | 10.0.0.2:80 | 20 | 1h | ",
				"prod | web | web2 | https | 10.0.0.2:443 | 20 | 1h | ",
				"staging | web | web1 | http | [fe80::1]:8080 | 5 | - | ",
			}))
			Expect(page).NotTo(ContainSubstring("10.0.0.66"), "the entry copied under another key is not listed")
			Expect(page).To(MatchRegexp(`id="count-dropped">1</b> dropped as untrusted`))
			Expect(page).To(ContainSubstring(`<li class="dropped-entry"><code>` + forged + `</code>`))
			Expect(page).To(MatchRegexp(`<span class="reason">signed by U[A-Z2-7]+, not by the host key U[A-Z2-7]+ its subject names</span>`))
			Expect(page).To(MatchRegexp(`id="count-endpoints">5</b>`))
			Expect(page).To(MatchRegexp(`id="count-services">3</b>`))
			Expect(page).To(MatchRegexp(`<td class="age" title="[^"]+">\d+s</td>`))
			Expect(page).To(ContainSubstring(`<a href="/services" class="here">Services</a>`))
		})

		It("filters by cluster, service and protocol, and says so when a filter is no name", func() {
			_, page := get("/services?cluster=prod&service=web&protocol=http")
			Expect(pageEndpoints(page)).To(Equal([]string{
				"prod | web | web1 | http | 10.0.0.1:80 | 10 | 1h | note=" + scriptAnnotation + " zone=a",
				"prod | web | web2 | http | 10.0.0.2:80 | 20 | 1h | ",
			}))
			Expect(page).To(ContainSubstring(`id="cluster" value="prod"`))
			_, page = get("/services?service=web&cluster=staging")
			Expect(pageEndpoints(page)).To(Equal([]string{"staging | web | web1 | http | [fe80::1]:8080 | 5 | - | "}))
			Expect(page).To(MatchRegexp(`id="count-dropped">0</b>`), "the dropped entry is in prod")
			_, page = get("/services?protocol=smtp")
			Expect(pageEndpoints(page)).To(BeEmpty())
			Expect(page).To(ContainSubstring("No services match these filters."))

			code, page := get("/services?cluster=" + url.QueryEscape("prod.>"))
			Expect(code).To(Equal(http.StatusOK))
			Expect(pageEndpoints(page)).To(BeEmpty())
			Expect(page).To(ContainSubstring(`id="services-filter-error"`))
			d, body := doc("/api/v1/services?cluster=" + url.QueryEscape("prod.>"))
			Expect(d.Clusters).To(BeEmpty())
			Expect(string(body)).To(ContainSubstring(`"filter_error": "cluster filter \"prod.\u003e\" must be * or match`))
		})

		It("answers the API document the page shows, valid by its schema with Go's validator and the stock one", func() {
			schemas := compileSchemas()
			pythons := schemacheck.Pythons()
			Expect(pythons).NotTo(BeEmpty(), "no python3 with jsonschema: install python3-jsonschema (make deps)")
			var bodies [][]byte
			for _, q := range []string{"", "?cluster=prod", "?service=web&protocol=https", "?protocol=smtp", "?cluster=-bad"} {
				_, page := get("/services" + q)
				d, body := doc("/api/v1/services" + q)
				Expect(d.lines()).To(Equal(pageEndpoints(page)), q)
				Expect(page).To(MatchRegexp(`id="count-endpoints">%d</b>`, d.Endpoints))
				v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(body)))
				Expect(err).NotTo(HaveOccurred())
				Expect(schemas["ui/services.schema.json"].Validate(v)).To(Succeed(), "%s:\n%s", q, body)
				bodies = append(bodies, body)
			}
			d, _ := doc("/api/v1/services")
			Expect(d.Endpoints).To(Equal(5))
			Expect(d.Services).To(Equal(3))
			Expect(d.Dropped).To(Equal(1))
			Expect(d.DroppedEntries).To(HaveExactElements(HaveField("Subject", forged)))
			Expect(d.DroppedEntries[0].Reason).To(HavePrefix("signed by "))
			web1 := d.Clusters[0].Services[1].Endpoints[0]
			Expect(web1.Annotations).To(HaveKeyWithValue("note", scriptAnnotation))
			Expect(web1.Published).To(BeTemporally("~", time.Now(), time.Minute))
			Expect(web1.AgeSeconds).To(BeNumerically("<", 60))
			for _, py := range pythons {
				code, out, err := schemacheck.Validate(py, GinkgoT().TempDir(), "../schemas/ui/services.schema.json", bodies...)
				Expect(err).NotTo(HaveOccurred())
				Expect(code).To(Equal(0), "%s -m jsonschema:\n%s", py, out)
				spoiled, err := schemacheck.Spoil(bodies[0])
				Expect(err).NotTo(HaveOccurred())
				code, out, err = schemacheck.Validate(py, GinkgoT().TempDir(), "../schemas/ui/services.schema.json", spoiled)
				Expect(err).NotTo(HaveOccurred())
				Expect(code).NotTo(Equal(0), "a spoiled document was accepted")
				Expect(out).To(ContainSubstring(schemacheck.Canary))
			}
		})

		It("names the first 100 dropped entries and counts them all", func() {
			for i := range 120 {
				e := &registration.Entry{Cluster: "prod", Service: "mail", Protocol: "smtp", Address: fmt.Sprintf("10.9.%d.%d", i/250, i%250+1), Port: 25, Priority: 1}
				_, err := js.Publish(ctx, e.PublisherSubject("UNSIGNED"), []byte(`{"cluster":"prod"}`))
				Expect(err).NotTo(HaveOccurred())
			}
			_, page := get("/services")
			Expect(page).To(MatchRegexp(`id="count-dropped">121</b>`))
			Expect(page).To(ContainSubstring("121 entries dropped as untrusted (the first 100 named)"))
			Expect(strings.Count(page, `<li class="dropped-entry">`)).To(Equal(100))
			Expect(page).To(ContainSubstring(`<span class="reason">not signed</span>`))
			d, _ := doc("/api/v1/services")
			Expect(d.Dropped).To(Equal(121))
			Expect(d.DroppedEntries).To(HaveLen(100))
			Expect(d.Endpoints).To(Equal(5), "the trusted endpoints are all still listed")
		})

		It("shows an annotation holding a script as text", func() {
			_, page := get("/services")
			Expect(page).NotTo(ContainSubstring(scriptAnnotation))
			Expect(page).To(ContainSubstring(`<span class="annotation">note=&lt;script&gt;alert(&#39;svc&#39;)&lt;/script&gt;</span>`))
			Expect(strings.Count(page, "<script")).To(Equal(2), "only the page's own live.js and sort.js")
			Expect(strings.Count(page, `<script src="/static/live.js" defer></script>`) + strings.Count(page, `<script src="/static/sort.js" defer></script>`)).To(Equal(2))
		})

		It("shows nothing to a request without the token or a session", func() {
			const token = "services-canary-0123456789abcdef"
			base = serve(ui.Options{AuthToken: token})
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			for _, p := range []string{"/services", "/api/v1/services", "/services?cluster=prod"} {
				resp, err := client.Get(base + p)
				Expect(err).NotTo(HaveOccurred())
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				Expect(err).NotTo(HaveOccurred())
				Expect(resp.StatusCode).To(BeElementOf(http.StatusUnauthorized, http.StatusSeeOther), p)
				Expect(string(body)).NotTo(ContainSubstring("10.0.0.1"), p)
				Expect(string(body)).NotTo(ContainSubstring("web1"), p)
			}
			r, err := http.NewRequest(http.MethodGet, base+"/api/v1/services", nil)
			Expect(err).NotTo(HaveOccurred())
			r.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(r)
			Expect(err).NotTo(HaveOccurred())
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			Expect(string(body)).To(ContainSubstring(`"endpoint": "10.0.0.1:80"`))
		})
	})
})
