package lab

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupDir names the directory below the machine's cgroup2 hierarchy that
// holds one directory per running lab, named OWNERPID-RANDOM.
const cgroupDir = "ccm-lab"

// cgroup2Mount returns where the machine mounts its cgroup2 hierarchy:
// /sys/fs/cgroup on a unified system, /sys/fs/cgroup/unified on a hybrid
// one.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("%w: reading mounts: %v", ErrUnsupported, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		fields := strings.Fields(sc.Text())
		for i, fl := range fields {
			if fl == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4], nil
			}
		}
	}
	return "", fmt.Errorf("%w: no cgroup2 hierarchy is mounted (systemd in a lab host needs one: mount -t cgroup2 none /sys/fs/cgroup/unified)", ErrUnsupported)
}

// sweep removes what labs whose owner died left behind: it kills the
// processes in each such lab's cgroup and removes the cgroups. A lab's
// supervisors do this themselves; sweep covers a supervisor killed too.
func sweep(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		owner, _, ok := strings.Cut(e.Name(), "-")
		pid, err := strconv.Atoi(owner)
		if !ok || err != nil || pid <= 0 || alive(pid) {
			continue
		}
		removeCgroup(filepath.Join(base, e.Name()))
	}
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// removeCgroup kills every process below dir, waits (bounded) for the tree
// to empty and removes it, deepest directories first.
func removeCgroup(dir string) error {
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	deadline := time.Now().Add(10 * time.Second)
	for populated(dir) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var last error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			last = err
		}
	}
	if last != nil {
		return fmt.Errorf("removing cgroup %s: %w", dir, last)
	}
	return nil
}

// populated reports whether a process is left in the cgroup tree at dir.
func populated(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false
	}
	return strings.Contains(string(b), "populated 1")
}
