package runner

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// procRoot is where the process table is read from.
const procRoot = "/proc"

// maxEnviron bounds how much of a process's environment is read when looking
// for the exec marker.
const maxEnviron = 1 << 20

// procStat is what the runner needs from /proc/<pid>/stat.
type procStat struct {
	pid   int
	ppid  int
	pgid  int
	state byte
	// start is the start time in clock ticks since boot: with pid it names
	// one process, so a reused pid is never mistaken for the one seen before.
	start uint64
}

// readStat parses /proc/<pid>/stat. The command name is skipped by looking
// for the last ')', as it may hold spaces and parentheses.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(procRoot + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(pid, b)
}

func parseStat(pid int, b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procStat{}, fmt.Errorf("stat of %d: malformed", pid)
	}
	// Fields after the name: 3 state, 4 ppid, 5 pgrp, 6 session, ... 22 starttime.
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("stat of %d: %d fields", pid, len(f))
	}
	st := procStat{pid: pid, state: f[0][0]}
	var errs [3]error
	st.ppid, errs[0] = strconv.Atoi(f[1])
	st.pgid, errs[1] = strconv.Atoi(f[2])
	st.start, errs[2] = strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(errs[:]...); err != nil {
		return procStat{}, fmt.Errorf("stat of %d: %w", pid, err)
	}
	return st, nil
}

// listProcs returns the stat of every process that could be read; processes
// that end while the table is read are skipped.
func listProcs() ([]procStat, error) {
	d, err := os.Open(procRoot)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]procStat, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		if st, err := readStat(pid); err == nil {
			out = append(out, st)
		}
	}
	return out, nil
}

// environValue returns the value of key in pid's environment, read into
// buf (bounding the read), if present. Zombies and kernel threads have no
// environment and never match.
func environValue(pid int, key string, buf []byte) (string, bool) {
	f, err := os.Open(procRoot + "/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return "", false
	}
	defer f.Close()
	n, _ := readFull(f, buf)
	prefix := []byte(key + "=")
	for e := range bytes.SplitSeq(buf[:n], []byte{0}) {
		if v, ok := bytes.CutPrefix(e, prefix); ok {
			return string(v), true
		}
	}
	return "", false
}

// ownPIDNamespace is this process's PID namespace, as /proc names it
// ("pid:[inode]"), or "" when it cannot be read.
var ownPIDNamespace = sync.OnceValue(func() string {
	ns, _ := os.Readlink(procRoot + "/self/ns/pid")
	return ns
})

// samePIDNamespace reports whether pid is in this process's PID namespace.
// When either namespace cannot be read, the answer is no: a process is left
// alone rather than judged by a pid that may be another namespace's.
func samePIDNamespace(pid int) bool {
	own := ownPIDNamespace()
	ns, err := os.Readlink(procRoot + "/" + strconv.Itoa(pid) + "/ns/pid")
	return own != "" && err == nil && ns == own
}

func readFull(f *os.File, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil || m == 0 {
			return n, err
		}
	}
	return n, nil
}

// signalProc sends sig to the process pid only if it is still the one that
// started at start: it opens a pidfd first and checks the start time after,
// so a pid reused in between is never signalled.
func signalProc(pid int, start uint64, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	st, err := readStat(pid)
	if err != nil {
		return err
	}
	if st.start != start {
		return syscall.ESRCH
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0)
}
