package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// cgroupKillWait bounds how long a killed cgroup may take to empty before
// it is left for KillLeftovers.
const cgroupKillWait = 5 * time.Second

// cgroupParent is the cgroup v2 directory below which every exec of one
// supervisor gets its own cgroup: <this process's cgroup>/ccm-exec.<instance>.
type cgroupParent struct {
	dir string
}

// ownCgroup2 returns the directory of this process's cgroup v2, found from
// /proc/self/cgroup (the "0::" line) and the cgroup2 mount in
// /proc/self/mountinfo.
func ownCgroup2() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	var rel string
	found := false
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel, found = p, true
			break
		}
	}
	if !found {
		return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent maj:min root mountpoint options [optional...] - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		fields := strings.Fields(pre)
		if len(fields) < 5 {
			continue
		}
		root, mnt := fields[3], fields[4]
		sub := rel
		if root != "/" {
			if !strings.HasPrefix(rel, root) {
				continue
			}
			sub = strings.TrimPrefix(rel, root)
		}
		dir := filepath.Join(mnt, sub)
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
			return "", fmt.Errorf("cgroup %s: %w", dir, err)
		}
		return dir, nil
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("cgroup2 is not mounted")
}

// newCgroupParent makes (or reuses) the parent cgroup for instance and checks
// that a child cgroup can be made and killed there.
func newCgroupParent(instance string) (*cgroupParent, error) {
	own, err := ownCgroup2()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(own, "ccm-exec."+instance)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		return nil, fmt.Errorf("cgroup.kill (Linux 5.14 or later) is not available: %w", err)
	}
	p := &cgroupParent{dir: dir}
	probe, err := p.create("probe." + ownerTag())
	if err != nil {
		return nil, err
	}
	if err := probe.killAndRemove(); err != nil {
		return nil, err
	}
	return p, nil
}

// execCgroup is the cgroup one exec's processes start in.
type execCgroup struct {
	dir string
	fd  *os.File
}

func (p *cgroupParent) create(name string) (*execCgroup, error) {
	dir := filepath.Join(p.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	fd, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil, err
	}
	return &execCgroup{dir: dir, fd: fd}, nil
}

// kill sends SIGKILL to every process in the cgroup, atomically with respect
// to forks.
func (c *execCgroup) kill() error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
}

// killAndRemove kills every process in the cgroup, waits (bounded) until it
// is empty and removes it.
func (c *execCgroup) killAndRemove() error {
	if c.fd != nil {
		_ = c.fd.Close()
	}
	return killCgroupDir(c.dir)
}

func killCgroupDir(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	deadline := time.Now().Add(cgroupKillWait)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		if err != nil {
			return fmt.Errorf("cgroup %s: %w", dir, err)
		}
		if bytes.Contains(b, []byte("populated 0")) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: still populated %s after kill", dir, cgroupKillWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	return nil
}

// leftovers kills and removes every exec cgroup below the parent whose owner
// process is gone, returning how many it removed.
func (p *cgroupParent) leftovers() (int, error) {
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := strings.TrimPrefix(e.Name(), "probe.")
		if !ownerGone(name) {
			continue
		}
		if err := killCgroupDir(filepath.Join(p.dir, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
