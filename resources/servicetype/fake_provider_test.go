package servicetype_test

import (
	"context"
	"sync"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/servicetype"
)

// fakeService is a hand-written service provider that keeps a simulated
// service in memory and records every call by method name.
type fakeService struct {
	// guards everything below
	mu      sync.Mutex
	running bool
	enabled bool
	calls   []string
	// stuck lists methods that succeed but change nothing, so the desired
	// state is never reached.
	stuck map[string]bool
	// fail makes a method return the error.
	fail map[string]error
	// nilState makes Status answer with no state and no error.
	nilState bool
	// masked makes Status report the service masked.
	masked bool
}

var _ servicetype.Provider = (*fakeService)(nil)

func newFake(running, enabled bool) *fakeService {
	return &fakeService{running: running, enabled: enabled, stuck: map[string]bool{}, fail: map[string]error{}}
}

func (f *fakeService) Name() string { return "fake" }

func (f *fakeService) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeService) do(method string, change func()) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, method)
	if err := f.fail[method]; err != nil {
		return err
	}
	if !f.stuck[method] {
		change()
	}
	return nil
}

func (f *fakeService) Enable(_ context.Context, _ string) error {
	return f.do("Enable", func() { f.enabled = true })
}

func (f *fakeService) Disable(_ context.Context, _ string) error {
	return f.do("Disable", func() { f.enabled = false })
}

func (f *fakeService) Start(_ context.Context, _ string) error {
	return f.do("Start", func() { f.running = true })
}

func (f *fakeService) Stop(_ context.Context, _ string) error {
	return f.do("Stop", func() { f.running = false })
}

func (f *fakeService) Restart(_ context.Context, _ string) error {
	return f.do("Restart", func() { f.running = true })
}

func (f *fakeService) Status(_ context.Context, service string) (*protocol.ServiceState, error) {
	var st *protocol.ServiceState
	err := f.do("Status", func() {
		if f.nilState {
			return
		}
		ensure := servicetype.EnsureStopped
		if f.running {
			ensure = servicetype.EnsureRunning
		}
		st = &protocol.ServiceState{
			CommonState: protocol.NewCommonState(protocol.TypeService, service, ensure),
			Metadata:    &protocol.ServiceMetadata{Name: service, Provider: "fake", Enabled: f.enabled, Running: f.running, Masked: f.masked},
		}
	})
	return st, err
}

// notAService implements only resources.Provider.
type notAService struct{}

func (notAService) Name() string { return "other" }

// pendingService is a fakeService whose service can be on its way up: not
// running, but started again unless it is stopped (systemd's activating).
type pendingService struct {
	*fakeService
	pending bool
	// stopKeepsPending makes Stop leave it on its way up.
	stopKeepsPending bool
}

var _ servicetype.StartPending = (*pendingService)(nil)

func (f *pendingService) StartPending(_ context.Context, _ string) (bool, error) {
	var pending bool
	err := f.do("StartPending", func() { pending = f.pending })
	return pending, err
}

func (f *pendingService) Stop(ctx context.Context, service string) error {
	err := f.fakeService.Stop(ctx, service)
	if err == nil && !f.stopKeepsPending {
		f.pending = false
	}
	return err
}
