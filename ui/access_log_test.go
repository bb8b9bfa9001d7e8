package ui_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/ui"
)

// lockedBuffer is a bytes.Buffer the dashboard's goroutines may write
// while the spec reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the JSON log lines written so far whose msg is msg.
func (b *lockedBuffer) lines(msg string) []map[string]any {
	GinkgoHelper()
	b.mu.Lock()
	data := bytes.Clone(b.buf.Bytes())
	b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var line map[string]any
		Expect(json.Unmarshal(sc.Bytes(), &line)).To(Succeed(), sc.Text())
		if line["msg"] == msg {
			out = append(out, line)
		}
	}
	return out
}

var _ = Describe("the dashboard's access log", func() {
	const token = "access-log-canary-0123456789"

	It("logs one line per request with method, path without its query, status code and duration, no field empty", func() {
		fl := fleettest.StartWith(GinkgoT(), fleettest.Options{History: true}, 2, nil)
		logs := &lockedBuffer{}
		base := serveDashboard(fl.Connect(GinkgoT()), ui.Options{AuthToken: token,
			Log: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
		do := func(method, path string, bearer bool) int {
			GinkgoHelper()
			req, err := http.NewRequest(method, base+path, nil)
			Expect(err).NotTo(HaveOccurred())
			if bearer {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
			Expect(err).NotTo(HaveOccurred())
			_, _ = io.Copy(io.Discard, resp.Body)
			Expect(resp.Body.Close()).To(Succeed())
			return resp.StatusCode
		}
		type want struct {
			method, path string
			bearer       bool
			logged       string
			code         int
		}
		wants := []want{
			{"GET", "/runs?since=1h&outcome=failed", true, "/runs", 200},
			{"GET", "/api/v1/fleet?where=os%3Ddebian", true, "/api/v1/fleet", 200},
			{"GET", "/login?next=%2Fruns%3Fsecret%3Dhunter2", false, "/login", 200},
			{"GET", "/no/such/page", true, "/no/such/page", 404},
			{"POST", "/api/v1/fleet", true, "/api/v1/fleet", 405},
			{"GET", "/drift", false, "/drift", 401},
			{"HEAD", "/static/style.css", false, "/static/style.css", 200},
		}
		for _, w := range wants {
			Expect(do(w.method, w.path, w.bearer)).To(Equal(w.code), w.method+" "+w.path)
		}
		var lines []map[string]any
		Eventually(func() []map[string]any { lines = logs.lines("ui: request"); return lines }).Should(HaveLen(len(wants)), "one line a request")
		for i, w := range wants {
			line := lines[i]
			Expect(line).To(HaveKeyWithValue("level", "INFO"))
			Expect(line).To(HaveKeyWithValue("method", w.method))
			Expect(line).To(HaveKeyWithValue("path", w.logged), "the path, never its query")
			Expect(line).To(HaveKeyWithValue("status", BeEquivalentTo(w.code)))
			Expect(line).To(HaveKeyWithValue("duration", BeNumerically(">", 0)))
			for k, v := range line {
				Expect(v).NotTo(BeZero(), "field %s of %v", k, line)
			}
		}
		all, err := json.Marshal(lines)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(all)).NotTo(Or(ContainSubstring("hunter2"), ContainSubstring("since"), ContainSubstring(token)))
		Expect(strings.Count(string(all), `"status"`)).To(Equal(len(wants)))
	})
})
