package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/protocol"
)

// logBuffer collects an agent's log output; the agent writes from its own
// goroutines while the spec reads.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Split(strings.TrimSpace(b.buf.String()), "\n")
}

// duplicateKey returns the first key that occurs twice in one JSON object
// of data (nested objects included), or "".
func duplicateKey(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func() (string, error)
	walk = func() (string, error) {
		tok, err := dec.Token()
		if err != nil {
			return "", err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return "", err
				}
				key := k.(string)
				if seen[key] {
					return key, nil
				}
				seen[key] = true
				if d, err := walk(); d != "" || err != nil {
					return d, err
				}
			}
			_, err = dec.Token()
			return "", err
		case json.Delim('['):
			for dec.More() {
				if d, err := walk(); d != "" || err != nil {
					return d, err
				}
			}
			_, err = dec.Token()
			return "", err
		}
		return "", nil
	}
	d, err := walk()
	if err == io.EOF {
		err = nil
	}
	return d, err
}

var _ = Describe("The agent's log", func() {
	It("names the request and its signer on every line about a refused request, logs each refusal once, and repeats no key in a JSON line", func() {
		dir := GinkgoT().TempDir()
		ops, stranger := newScopeKey(), newScopeKey()
		policy := filepath.Join(dir, "policy.yaml")
		Expect(os.WriteFile(policy, []byte(fmt.Sprintf("signers:\n  - name: ops\n    public_key: %s\n    allow: [file]\n", ops.pub)), 0o644)).To(Succeed())
		logs := &logBuffer{}
		log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		f := startAgentAs(agent.Config{Identity: "web-1", Policy: policy, StateDir: filepath.Join(dir, "state")},
			map[string]any{"os": "debian"}, agent.WithLogger(log))

		canary := filepath.Join(dir, "canary")
		forbidden := ensureRequest("log-forbidden-1", time.Minute, "exec", map[string]any{"name": "/usr/bin/touch " + canary})
		Expect(f.sendSigned("web-1", ops, forbidden).Error.Code).To(Equal(protocol.CodeForbidden))
		unknown := ensureRequest("log-unknown-1", time.Minute, "exec", map[string]any{"name": "/usr/bin/touch " + canary})
		Expect(f.sendSigned("web-1", stranger, unknown).Error.Code).To(Equal(protocol.CodeUnauthenticated))
		Expect(canary).ToNot(BeAnExistingFile())

		about := func(id string) []map[string]any {
			var out []map[string]any
			for _, l := range logs.lines() {
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) == nil && m["request"] == id {
					out = append(out, m)
				}
			}
			return out
		}
		for _, c := range []struct {
			id     string
			signer string
			code   protocol.Code
		}{{forbidden.ID, ops.pub, protocol.CodeForbidden}, {unknown.ID, stranger.pub, protocol.CodeUnauthenticated}} {
			Eventually(func() []map[string]any { return about(c.id) }).ShouldNot(BeEmpty(), "a log line about %s", c.id)
			lines := about(c.id)
			refusals := 0
			for _, m := range lines {
				Expect(m).To(HaveKeyWithValue("signer", c.signer), "every line about %s names its signer: %v", c.id, m)
				if m["code"] == string(c.code) {
					refusals++
					Expect(m).To(HaveKeyWithValue("level", "WARN"))
				}
			}
			Expect(refusals).To(Equal(1), "the refusal of %s is logged once: %v", c.id, lines)
		}

		for _, l := range logs.lines() {
			dup, err := duplicateKey([]byte(l))
			Expect(err).ToNot(HaveOccurred(), l)
			Expect(dup).To(BeEmpty(), "a key twice in one log line: %s", l)
		}
	})

	It("finds a repeated key in one JSON object (the check above can fail)", func() {
		Expect(duplicateKey([]byte(`{"a":1,"b":{"c":2,"c":3}}`))).To(Equal("c"))
		Expect(duplicateKey([]byte(`{"a":1,"a":2}`))).To(Equal("a"))
		Expect(duplicateKey([]byte(`{"a":[{"b":1},{"b":2}]}`))).To(BeEmpty())
	})
})
