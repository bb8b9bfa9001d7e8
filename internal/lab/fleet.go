package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ccm-fleet/ccm/internal/packaging"
)

// BuildDeb builds the project's ccm-fleet .deb for this machine's
// architecture from the checkout at root into out, and returns its path.
func BuildDeb(ctx context.Context, root, out string) (string, error) {
	paths, err := packaging.Build(ctx, packaging.Config{
		Root: root, Out: out, Version: "0.0.0-lab", Commit: "lab",
		Arches: []string{runtime.GOARCH}, Formats: []string{"deb"},
	}, nil)
	if err != nil {
		return "", fmt.Errorf("lab: building the .deb: %w", err)
	}
	return paths[0], nil
}

// FleetOptions says what StartFleet sets up.
type FleetOptions struct {
	// Deb is the ccm-fleet .deb every host installs; its ccm-broker and
	// ccm-orch also run on the machine, as the operator's.
	Deb string
	// Hosts are the hosts' names.
	Hosts []string
	// Facts are custom facts per host name (agent.yaml's facts).
	Facts map[string]map[string]string
}

// Fleet is a lab whose hosts each run the project's agent from its package
// as their systemd unit, connected to a broker on the machine's loopback,
// with a policy that trusts one signing key (Key) for every resource type.
type Fleet struct {
	*Lab
	// Server is the broker's URL; Key the signing seed ccm-orch uses;
	// Bin holds the package's commands, unpacked on the machine.
	Server, Key, Bin string
	dir              string
	broker           *exec.Cmd
	done             chan struct{}
}

// StartFleet starts a broker, makes a signing key, boots the hosts, installs
// the package in each with dpkg -i, configures and starts ccm-agent with
// systemctl, and returns when every agent answers discover. On an error
// nothing is left running.
func StartFleet(ctx context.Context, o FleetOptions) (f *Fleet, err error) {
	if o.Deb == "" {
		return nil, fmt.Errorf("lab: no .deb given")
	}
	dir, err := os.MkdirTemp("", "ccm-lab-fleet-")
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	f = &Fleet{dir: dir, Bin: filepath.Join(dir, "pkg", "usr", "bin")}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", o.Deb, filepath.Join(dir, "pkg")).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("lab: unpacking %s: %v: %s", o.Deb, err, out)
	}
	if err := f.startBroker(ctx); err != nil {
		return nil, err
	}
	if _, err := f.Orch(ctx, "keys", "new", "lab", "--dir", dir); err != nil {
		return nil, err
	}
	f.Key = filepath.Join(dir, "lab.seed")
	pub, err := os.ReadFile(filepath.Join(dir, "lab.pub"))
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	policy := fmt.Sprintf(`max_clock_skew: 30s
signers:
  - name: lab
    public_key: %s
    allow: [file, package, service, exec, archive, scaffold]
    assignments_admin: true
`, strings.TrimSpace(string(pub)))

	if f.Lab, err = Start(ctx, o.Hosts...); err != nil {
		return nil, err
	}
	errs := make([]error, len(o.Hosts))
	var wg sync.WaitGroup
	for i, h := range f.Hosts() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = h.InstallDeb(ctx, o.Deb); errs[i] == nil {
				errs[i] = h.StartAgent(ctx, AgentSetup{Server: f.Server, Policy: policy, Facts: o.Facts[h.Name()]})
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return f, f.waitDiscovered(ctx, o.Hosts)
}

// KillBroker kills the broker with SIGKILL, as a crash would, and waits for
// it to be gone.
func (f *Fleet) KillBroker() {
	if f.broker == nil {
		return
	}
	_ = f.broker.Process.Kill()
	<-f.done
	f.broker = nil
}

// StartBroker starts the broker again after KillBroker, on the same port
// with the same store.
func (f *Fleet) StartBroker(ctx context.Context) error {
	if f.broker != nil {
		return fmt.Errorf("lab: the broker is running")
	}
	return f.startBroker(ctx)
}

// startBroker runs the package's ccm-broker with a JetStream store in the
// fleet's directory: on a free loopback port the first time, on the same
// port after that.
func (f *Fleet) startBroker(ctx context.Context) error {
	listen := "127.0.0.1:0"
	if f.Server != "" {
		listen = strings.TrimPrefix(f.Server, "nats://")
	}
	cmd := exec.Command(filepath.Join(f.Bin, "ccm-broker"), "--listen", listen, "--store", filepath.Join(f.dir, "store"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("lab: starting ccm-broker: %w", err)
	}
	f.broker, f.done = cmd, make(chan struct{})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // nobody reads once it is ready
			}
		}
		close(lines)
		_ = cmd.Wait()
		close(f.done)
	}()
	timeout := time.After(30 * time.Second)
	var seen []string
	listening := false
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return fmt.Errorf("lab: ccm-broker exited: %s", strings.Join(seen, "\n"))
			}
			seen = append(seen, l)
			if url, ok := strings.CutPrefix(l, "broker listening on "); ok {
				f.Server, listening = strings.TrimSpace(url), true
			}
			if listening && strings.Contains(l, " ready (") {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("lab: ccm-broker not ready after 30s: %s", strings.Join(seen, "\n"))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Orch runs the package's ccm-orch on the machine against the fleet's
// broker, signing with its key. A non-zero exit returns the Result and an
// error wrapping ErrCommand.
func (f *Fleet) Orch(ctx context.Context, args ...string) (Result, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(f.Bin, "ccm-orch"), args...)
	cmd.Env = append(os.Environ(), "CCM_SERVER="+f.Server, "NO_COLOR=1")
	if f.Key != "" {
		cmd.Env = append(cmd.Env, "CCM_KEY="+f.Key)
	}
	return run(cmd, "ccm-orch "+strings.Join(args, " "))
}

// waitDiscovered waits (bounded) until discover lists every host.
func (f *Fleet) waitDiscovered(ctx context.Context, hosts []string) error {
	want := append([]string(nil), hosts...)
	sort.Strings(want)
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		res, _ := f.Orch(ctx, "discover", "--json")
		last = res.Stdout + res.Stderr
		missing := 0
		for _, h := range want {
			if !strings.Contains(res.Stdout, `"`+h+`"`) {
				missing++
			}
		}
		if missing == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%w: not every agent answered discover within 60s (want %s): %s", ErrBoot, strings.Join(want, ", "), last)
}

// Close stops the hosts, then the broker, and removes the fleet's files.
func (f *Fleet) Close() error {
	var errs []error
	if f.Lab != nil {
		errs = append(errs, f.Lab.Close())
	}
	if f.broker != nil {
		_ = f.broker.Process.Signal(os.Interrupt)
		select {
		case <-f.done:
		case <-time.After(10 * time.Second):
			_ = f.broker.Process.Kill()
			<-f.done
		}
	}
	errs = append(errs, os.RemoveAll(f.dir))
	return errors.Join(errs...)
}
