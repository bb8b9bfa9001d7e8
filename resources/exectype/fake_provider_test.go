package exectype_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/exectype"
)

// fakeProvider is a hand-written exectype.Provider: each command line it is
// asked to run answers from results (exit 0 when absent) and is recorded.
type fakeProvider struct {
	// guards everything below
	mu        sync.Mutex
	creates   bool
	results   map[string]*exectype.Result
	errs      map[string]error
	statusErr error
	executed  []string
	// createOnRun makes the creates file "appear" once the main command ran.
	createOnRun string
}

func newFake() *fakeProvider {
	return &fakeProvider{results: map[string]*exectype.Result{}, errs: map[string]error{}}
}

func (f *fakeProvider) Name() string { return "fake" }

// exits scripts command to exit with code.
func (f *fakeProvider) exits(command string, code int) *fakeProvider {
	f.results[command] = &exectype.Result{ExitCode: code}
	return f
}

func (f *fakeProvider) Execute(ctx context.Context, _ *exectype.Properties, command string) (*exectype.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.executed = append(f.executed, command)
	if err, ok := f.errs[command]; ok {
		return f.results[command], err
	}
	if command == f.createOnRun {
		f.creates = true
	}
	if r, ok := f.results[command]; ok {
		return r, nil
	}
	return &exectype.Result{}, nil
}

func (f *fakeProvider) Status(ctx context.Context, p *exectype.Properties) (*protocol.ExecState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if f.statusErr != nil {
		return nil, f.statusErr
	}
	return &protocol.ExecState{
		CommonState:      protocol.NewCommonState(protocol.TypeExec, p.Name, "present"),
		CreatesSatisfied: p.Creates != "" && f.creates,
		Metadata:         &protocol.ExecMetadata{Name: p.Name, Provider: "fake"},
	}, nil
}

func (f *fakeProvider) ran() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string{}, f.executed...)
}

// notExec is a provider that lacks the exec methods.
type notExec struct{}

func (notExec) Name() string { return "other" }

var errBoom = errors.New("boom")

// lines returns n numbered lines.
func lines(n int) string {
	s := ""
	for i := 1; i <= n; i++ {
		s += fmt.Sprintf("line %d\n", i)
	}
	return s
}
