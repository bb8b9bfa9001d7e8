package shadow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/accountns"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// syncBuffer is a log sink safe for the engine's concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logs holds everything the engine and the providers logged in a spec.
var logs *syncBuffer

var _ = BeforeEach(func() {
	Expect(accountns.Inside()).To(BeTrue(), "the specs must run inside the account namespace")
	logs = &syncBuffer{}
})

// ensure applies one resource of typ through the built-in registry (the
// real types and providers, real commands), as ccm-agent ensure does.
func ensure(typ string, props map[string]any, noop bool) *protocol.TransactionEvent {
	GinkgoHelper()
	ev, err := try(typ, props, noop)
	Expect(err).NotTo(HaveOccurred())
	return ev
}

// try is ensure returning the error of a request that could not be
// processed (invalid properties).
func try(typ string, props map[string]any, noop bool) (*protocol.TransactionEvent, error) {
	GinkgoHelper()
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg, err := providers.Builtin(providers.Options{Runner: runner.Exec{}, Log: log})
	Expect(err).NotTo(HaveOccurred())
	eng := engine.New(reg, engine.WithLogger(log))
	env := templates.New(map[string]any{"os": "debian"}, map[string]any{})
	return eng.Ensure(context.Background(), engine.RunOptions{Noop: noop, Env: env}, engine.Spec{Type: typ, Properties: props})
}

// applied runs a resource for real and expects it to succeed and change.
func applied(typ string, props map[string]any) *protocol.TransactionEvent {
	GinkgoHelper()
	ev := ensure(typ, props, false)
	Expect(ev.Errors).To(BeEmpty())
	Expect(ev.Failed).To(BeFalse())
	Expect(ev.Changed).To(BeTrue())
	return ev
}

// stable runs a resource again and expects no change, for real and as a
// noop.
func stable(typ string, props map[string]any) {
	GinkgoHelper()
	for _, noop := range []bool{true, false} {
		ev := ensure(typ, props, noop)
		Expect(ev.Errors).To(BeEmpty())
		Expect(ev.Changed).To(BeFalse(), "noop=%t: %s", noop, ev.NoopMessage)
		Expect(ev.NoopMessage).To(BeEmpty())
	}
}

// noopSays runs a resource as a noop and expects the message; it then
// checks that the account files did not change.
func noopSays(typ string, props map[string]any, message string) *protocol.TransactionEvent {
	GinkgoHelper()
	before := accountFiles()
	ev := ensure(typ, props, true)
	Expect(ev.Errors).To(BeEmpty())
	Expect(ev.Changed).To(BeTrue())
	Expect(ev.Noop).To(BeTrue())
	Expect(ev.NoopMessage).To(Equal(message))
	Expect(accountFiles()).To(Equal(before), "a noop changed the account files")
	return ev
}

// failsUnchanged runs a resource and expects it to fail with an error
// holding want, the account files unchanged.
func failsUnchanged(typ string, props map[string]any, want string) *protocol.TransactionEvent {
	GinkgoHelper()
	before := accountFiles()
	ev := ensure(typ, props, false)
	Expect(ev.Failed).To(BeTrue())
	Expect(strings.Join(ev.Errors, "\n")).To(ContainSubstring(want))
	Expect(accountFiles()).To(Equal(before), "a failed resource changed the account files")
	return ev
}

func accountFiles() string {
	GinkgoHelper()
	var b strings.Builder
	for _, f := range accountns.AccountFiles {
		data, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		b.Write(data)
	}
	return b.String()
}

// getent returns the entry getent prints, "" when there is none.
func getent(db, key string) string {
	GinkgoHelper()
	out, err := exec.Command("getent", db, key).Output()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 2 {
		return ""
	}
	Expect(err).NotTo(HaveOccurred())
	return strings.TrimSpace(string(out))
}

// field is the nth (0-based) ':' field of a getent entry.
func field(entry string, n int) string {
	GinkgoHelper()
	f := strings.Split(entry, ":")
	Expect(len(f)).To(BeNumerically(">", n), entry)
	return f[n]
}

// run runs a command that must succeed (setting up a spec's accounts).
func run(argv ...string) {
	GinkgoHelper()
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%v: %s", argv, out)
}

// eventJSON is the event as a reply or history record carries it.
func eventJSON(ev *protocol.TransactionEvent) string {
	GinkgoHelper()
	b, err := json.Marshal(ev)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// cleanupUser removes a spec's accounts whatever happened.
func cleanupAccounts(users, groups []string) {
	DeferCleanup(func() {
		for _, u := range users {
			_ = exec.Command("userdel", "-r", u).Run()
		}
		for _, g := range groups {
			_ = exec.Command("groupdel", g).Run()
		}
	})
}

func itoa(v any) string {
	GinkgoHelper()
	switch n := v.(type) {
	case int:
		return strconv.Itoa(n)
	case string:
		return n
	}
	Fail(fmt.Sprintf("not a number: %v", v))
	return ""
}

func atoi(s string) int {
	GinkgoHelper()
	n, err := strconv.Atoi(s)
	Expect(err).NotTo(HaveOccurred())
	return n
}
