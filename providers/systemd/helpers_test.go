package systemd_test

import (
	"context"
	"os"
	"runtime"
	"strings"
	"sync"

	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/providers/systemd"
)

var daemonReload = []string{"systemctl", "daemon-reload"}

// unit is the exact argv systemctl is run with for verb on service.
func unit(verb, service string) []string {
	return []string{"systemctl", verb, "--system", "--", service}
}

// needReload is the exact argv that asks systemd whether service's unit
// files changed on disk since it loaded them.
func needReload(service string) []string {
	return []string{"systemctl", "show", "--system", "--property=NeedDaemonReload", "--", service}
}

// subState is the exact argv that asks systemd for service's SubState.
func subState(service string) []string {
	return []string{"systemctl", "show", "--system", "--property=SubState", "--", service}
}

// expectFixture scripts argv to exit with exitCode and the captured output
// in testdata/<fixture>.txt (stdout) and testdata/<fixture>.stderr, where
// they exist.
func expectFixture(f *runner.Fake, argv []string, exitCode int, fixture string) {
	stdout, errOut := os.ReadFile("testdata/" + fixture + ".txt")
	stderr, errErr := os.ReadFile("testdata/" + fixture + ".stderr")
	Expect(errOut == nil || errErr == nil).To(BeTrue(), "fixture %s has neither .txt nor .stderr", fixture)
	f.Add(runner.Expectation{Argv: argv, Result: runner.Result{ExitCode: exitCode, Stdout: stdout, Stderr: stderr}})
}

// newProvider returns a provider of a fresh factory over f.
func newProvider(f runner.Runner) *systemd.Provider {
	p, err := systemd.NewFactory(f, nil).New()
	Expect(err).ToNot(HaveOccurred())
	return p.(*systemd.Provider)
}

// argvs lists the argv of every call the fake saw.
func argvs(f *runner.Fake) [][]string {
	var out [][]string
	for _, c := range f.Calls() {
		out = append(out, c.Argv())
	}
	return out
}

// overlapRunner answers is-active with active and is-enabled with enabled,
// and records the largest number of calls that were inside Run at once.
type overlapRunner struct {
	// guards everything below
	mu       sync.Mutex
	inflight int
	max      int
	calls    int
}

func (r *overlapRunner) Run(_ context.Context, c runner.Command) (*runner.Result, error) {
	r.mu.Lock()
	r.inflight++
	r.calls++
	r.max = max(r.max, r.inflight)
	r.mu.Unlock()

	// Give any other caller every chance to enter Run meanwhile.
	for range 200 {
		runtime.Gosched()
	}

	r.mu.Lock()
	r.inflight--
	r.mu.Unlock()

	out := ""
	switch strings.Join(c.Args[:1], "") {
	case "is-active":
		out = "active\n"
	case "is-enabled":
		out = "enabled\n"
	}
	return &runner.Result{Stdout: []byte(out)}, nil
}

func (r *overlapRunner) stats() (maxInflight, calls int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.max, r.calls
}

func protocolMetadata(name string, enabled, running bool) protocol.ServiceMetadata {
	return protocol.ServiceMetadata{Name: name, Provider: "systemd", Enabled: enabled, Running: running}
}
