package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTicks is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux the bench targets).
const clockTicks = 100

// maxTailLines bounds the output kept of a child, for error messages.
const maxTailLines = 40

// child is a long-running process the bench started (simulated agents, floor
// responders). It is told to stop with SIGTERM, and killed when the bench
// dies first.
type child struct {
	name  string
	cmd   *exec.Cmd
	ready chan struct{}
	done  chan struct{}

	mu    sync.Mutex
	lines []string // the last lines of its output
	err   error    // how it ended, once done is closed
}

// startChild starts bin with args; the child is ready once a line of its
// output contains marker.
func startChild(name, marker, bin string, args ...string) (*child, error) {
	c := &child{name: name, ready: make(chan struct{}), done: make(chan struct{})}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c.cmd = cmd
	var once sync.Once
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, marker) {
				once.Do(func() { close(c.ready) })
			}
			c.mu.Lock()
			c.lines = append(c.lines, line)
			if len(c.lines) > maxTailLines {
				c.lines = c.lines[len(c.lines)-maxTailLines:]
			}
			c.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		err := cmd.Wait()
		_ = pw.Close()
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		close(c.done)
	}()
	return c, nil
}

// tail is the last lines the child printed.
func (c *child) tail() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// waitReady waits for the ready marker, the child's end, ctx or timeout.
func (c *child) waitReady(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.ready:
		return nil
	case <-c.done:
		return fmt.Errorf("%s ended before it was ready: %v\n%s", c.name, c.err, c.tail())
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", c.name, ctx.Err())
	case <-t.C:
		return fmt.Errorf("%s not ready after %s\n%s", c.name, timeout, c.tail())
	}
}

// pid is the child's process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// stop asks the child to end (SIGTERM), kills it after timeout, and
// returns its process state.
func (c *child) stop(timeout time.Duration) *os.ProcessState {
	select {
	case <-c.done:
		return c.cmd.ProcessState
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	return c.cmd.ProcessState
}

// procCPU is the user+system CPU time process pid used so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields count from the
	// closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("unexpected /proc stat format")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("unexpected /proc stat format")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// procRSS is process pid's resident set size and its peak, in bytes.
func procRSS(pid int) (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, perr := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch {
		case perr != nil:
		case k == "VmRSS":
			rss = kb << 10
		case k == "VmHWM":
			peak = kb << 10
		}
	}
	return rss, peak, nil
}

// selfCPU is the user+system CPU time this process used so far (children
// not included).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// run is one finished whole-process run.
type run struct {
	// replied and unexpected are the run's accounting: hosts that replied,
	// and replies from hosts that were not asked
	replied, unexpected int
	wall                time.Duration
	code                int
	cpu                 time.Duration
	maxRSS              int64 // bytes
	stdout              []byte
	errText             string
}

// processRuns gathers the measures of timed whole-process runs.
type processRuns struct {
	wall, cpu samples
	peak      int64 // bytes
}

func (p *processRuns) add(r run) {
	p.wall = append(p.wall, r.wall)
	p.cpu = append(p.cpu, r.cpu)
	p.peak = max(p.peak, r.maxRSS)
}

// fill sets the row's timing, the process's peak RSS and its median CPU.
func (p *processRuns) fill(row *Row) {
	p.wall.stats(row)
	row.PeakRSSMiB = mib(p.peak)
	row.CPUSeconds = round3(p.cpu.quantile(0.5).Seconds())
}

// maxOutput bounds what is kept of a process's output.
const maxOutput = 1 << 20

// peakRSSEnv is the environment variable ccm-agent and ccm-orch write
// their peak RSS to the file it names (cmd/internal/program.PeakRSSEnv).
const peakRSSEnv = "CCM_BENCH_PEAK_RSS"

// runProcess runs bin with args to its end and measures it: wall time
// from start to exit, exit status, CPU (the kernel's rusage of the child)
// and peak RSS. The peak is what the process reports itself (its VmHWM,
// see peakRSSEnv): the kernel's ru_maxrss of a child also counts the
// memory of its parent (this process, with a broker in it) at exec.
func runProcess(ctx context.Context, env []string, bin string, args ...string) (run, error) {
	rf, err := os.CreateTemp("", "ccm-bench-rss-")
	if err != nil {
		return run{}, err
	}
	_ = rf.Close()
	defer func() { _ = os.Remove(rf.Name()) }()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(env, peakRSSEnv+"="+rf.Name())
	var out, errOut boundedBuffer
	out.max, errOut.max = maxOutput, 8<<10
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err = cmd.Run()
	r := run{wall: time.Since(start), stdout: out.Bytes(), errText: strings.TrimSpace(errOut.String())}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return r, fmt.Errorf("%s: %w", bin, err)
	}
	st := cmd.ProcessState
	r.code = st.ExitCode()
	r.cpu = st.UserTime() + st.SystemTime()
	r.maxRSS = readPeakRSS(rf.Name())
	return r, nil
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// raiseFileLimit lifts the soft limit of open files towards want, raising
// the hard limit too when it is lower and the process may (root with
// CAP_SYS_RESOURCE may, up to fs.nr_open), and returns the limit in force.
// A limit below want is no error: a large fleet is then spread over more
// processes. Only a limit too small for any fleet is.
func raiseFileLimit(want uint64) (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, fmt.Errorf("open files limit: %w", err)
	}
	if l.Max < want {
		raised := syscall.Rlimit{Cur: want, Max: want}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			l = raised
		}
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return 0, fmt.Errorf("open files limit: %w", err)
		}
	}
	if l.Cur < 4*fdReserve {
		return 0, fmt.Errorf("open files limit is %d, too low to run a fleet: raise it (ulimit -n)", l.Cur)
	}
	return l.Cur, nil
}

// readPeakRSS reads what a process wrote to its peakRSSEnv file ("14308
// kB"), in bytes; 0 when it wrote nothing.
func readPeakRSS(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(b)), " kB"), 10, 64)
	if err != nil {
		return 0
	}
	return kb << 10
}
