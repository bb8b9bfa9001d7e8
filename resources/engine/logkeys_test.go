package engine_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// lockedBuffer is a log sink written from the engine's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

var _ = Describe("The engine's log", func() {
	It("names the resource once in each JSON line, through the engine and the resource's type", func() {
		logs := &lockedBuffer{}
		reg, err := providers.Builtin(providers.Options{})
		Expect(err).ToNot(HaveOccurred())
		eng := engine.New(reg, engine.WithLogger(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
		ev, err := eng.Ensure(context.Background(), engine.RunOptions{Env: templates.New(map[string]any{}, nil)},
			engine.Spec{Type: "exec", Properties: map[string]any{"name": "/bin/true"}})
		Expect(err).ToNot(HaveOccurred())
		Expect(ev.Failed).To(BeFalse())
		logs.mu.Lock()
		lines := strings.Split(strings.TrimSpace(logs.buf.String()), "\n")
		logs.mu.Unlock()
		Expect(lines).To(ContainElement(ContainSubstring(`"msg":"executing"`)))
		for _, l := range lines {
			Expect(strings.Count(l, `"resource":`)).To(BeNumerically("<=", 1), "a key twice in one line: %s", l)
		}
	})
})
