package accountns

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// envExec, set with envInside, names the program the re-executed test
// binary becomes once the overlays are set up (Command).
const envExec = "CCM_ACCOUNTNS_EXEC"

// envInside marks the re-executed test binary, inside the namespace; it
// holds the scratch directory the overlays' layers go to.
const envInside = "CCM_ACCOUNTNS_SCRATCH"

// Marker is the file that exists only inside the namespace's overlay of
// /etc: specs assert it before they change an account.
const Marker = "/etc/.ccm-accountns"

// Overlaid are the directories the namespace overlays: the account files,
// the homes, and the logs and mail spools the tools also write.
var Overlaid = []string{"/etc", "/home", "/var/log", "/var/mail"}

// AccountFiles are the files whose bytes must be the same after the run.
var AccountFiles = []string{"/etc/passwd", "/etc/shadow", "/etc/group", "/etc/gshadow"}

// Inside reports whether this process runs inside the namespace.
func Inside() bool {
	_, err := os.Stat(Marker)
	return os.Getenv(envInside) != "" && err == nil
}

// Main is a TestMain's body: outside the namespace it re-executes the test
// binary inside one and checks the account files afterwards; inside it
// sets the overlays up and calls run (m.Run). It returns the exit code.
func Main(run func() int) int {
	if scratch := os.Getenv(envInside); scratch != "" {
		if bin := os.Getenv(envExec); bin != "" {
			return becomeProgram(scratch, bin)
		}
		if err := setup(scratch); err != nil {
			fmt.Fprintf(os.Stderr, "accountns: setting up the overlays: %v\n", err)
			return 1
		}
		return run()
	}
	code, err := reexec()
	if err != nil {
		fmt.Fprintf(os.Stderr, "accountns: %v\n", err)
		return 1
	}
	return code
}

// reexec runs the test binary again under unshare and compares the
// account files before and after.
func reexec() (int, error) {
	if os.Geteuid() != 0 {
		return 1, errors.New("these specs create real accounts in a private mount namespace and need root (run them as root, as make test does)")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return 1, fmt.Errorf("unshare (util-linux) is needed: %w", err)
	}
	before, err := snapshot()
	if err != nil {
		return 1, err
	}
	scratch, err := os.MkdirTemp("", "ccm-accountns-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(scratch)
	exe, err := os.Executable()
	if err != nil {
		return 1, err
	}
	cmd := exec.Command(unshare, append([]string{"--mount", "--propagation", "private", "--", exe}, os.Args[1:]...)...)
	cmd.Env = append(os.Environ(), envInside+"="+scratch)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return 1, fmt.Errorf("running the specs in a namespace: %w", err)
		}
		code = exit.ExitCode()
	}
	after, err := snapshot()
	if err != nil {
		return 1, err
	}
	for i, f := range AccountFiles {
		if !bytes.Equal(before[i], after[i]) {
			return 1, fmt.Errorf("%s on the machine changed during the specs: the namespace leaked", f)
		}
	}
	fmt.Fprintf(os.Stderr, "accountns: %v on the machine are byte-identical to before the specs\n", AccountFiles)
	return code, nil
}

func snapshot() ([][]byte, error) {
	out := make([][]byte, len(AccountFiles))
	for i, f := range AccountFiles {
		b, err := os.ReadFile(f)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// setup mounts a tmpfs on scratch (in this namespace only) and an overlay
// over each Overlaid directory that exists, then writes the Marker.
func setup(scratch string) error {
	if err := syscall.Mount("tmpfs", scratch, "tmpfs", 0, "size=512m,mode=0700"); err != nil {
		return fmt.Errorf("tmpfs on %s: %w", scratch, err)
	}
	for i, dir := range Overlaid {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		upper := filepath.Join(scratch, fmt.Sprint(i), "upper")
		work := filepath.Join(scratch, fmt.Sprint(i), "work")
		for _, d := range []string{upper, work} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", dir, upper, work)
		if err := syscall.Mount("overlay", dir, "overlay", 0, opts); err != nil {
			return fmt.Errorf("overlay on %s: %w", dir, err)
		}
	}
	return os.WriteFile(Marker, []byte("accounts changed here stay in this namespace\n"), 0o644)
}

// Command returns a command that runs bin with args in a namespace of its
// own, with overlays of its own (a host's account files: what bin
// changes, no other process sees): the test binary is run again under
// unshare, sets the overlays up and becomes bin (same process). The
// overlays' scratch directory is removed by the returned cleanup, to call
// once the command has ended. The caller must run in a TestMain that calls
// Main.
func Command(bin string, args ...string) (*exec.Cmd, func(), error) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return nil, nil, fmt.Errorf("unshare (util-linux) is needed: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	scratch, err := os.MkdirTemp("", "ccm-accountns-host-")
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(unshare, append([]string{"--mount", "--propagation", "private", "--", exe}, args...)...)
	cmd.Env = append(os.Environ(), envInside+"="+scratch, envExec+"="+bin)
	return cmd, func() { _ = os.RemoveAll(scratch) }, nil
}

// becomeProgram sets the overlays up and executes bin with this process's
// arguments, without the namespace's variables.
func becomeProgram(scratch, bin string) int {
	if err := setup(scratch); err != nil {
		fmt.Fprintf(os.Stderr, "accountns: setting up the overlays: %v\n", err)
		return 1
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envInside+"=") && !strings.HasPrefix(kv, envExec+"=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(bin, append([]string{bin}, os.Args[1:]...), env)
	fmt.Fprintf(os.Stderr, "accountns: executing %s: %v\n", bin, err)
	return 1
}
