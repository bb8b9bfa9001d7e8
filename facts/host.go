package facts

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/shirou/gopsutil/v4/host"
)

// lsbRelease is the program gopsutil runs to learn the distribution when
// /etc/lsb-release is missing, as on Debian.
const lsbRelease = "/usr/bin/lsb_release"

// hostInfo gathers what gopsutil's host.InfoWithContext gathers, the same
// way, but for one step: on Debian without /etc/lsb-release gopsutil runs
// lsb_release (a Python program, about 10 ms, most of a cold ccm-agent
// ensure) only to learn that the distributor is Debian, which
// /etc/os-release says without starting a process. Anywhere else the
// platform comes from gopsutil as before.
func hostInfo(ctx context.Context) (*host.InfoStat, error) {
	ret := &host.InfoStat{OS: runtime.GOOS}
	var err error
	if ret.Hostname, err = os.Hostname(); err != nil {
		return nil, err
	}
	if p, f, v, ok := debianPlatform(); ok {
		ret.Platform, ret.PlatformFamily, ret.PlatformVersion = p, f, v
	} else if ret.Platform, ret.PlatformFamily, ret.PlatformVersion, err = host.PlatformInformationWithContext(ctx); err != nil {
		return nil, err
	}
	if ret.KernelVersion, err = host.KernelVersionWithContext(ctx); err != nil {
		return nil, err
	}
	if ret.KernelArch, err = host.KernelArch(); err != nil {
		return nil, err
	}
	if ret.VirtualizationSystem, ret.VirtualizationRole, err = host.VirtualizationWithContext(ctx); err != nil {
		return nil, err
	}
	if ret.BootTime, err = host.BootTimeWithContext(ctx); err != nil {
		return nil, err
	}
	if ret.Uptime, err = host.UptimeWithContext(ctx); err != nil {
		return nil, err
	}
	if ret.Procs, err = numProcs(); err != nil {
		return nil, err
	}
	if ret.HostID, err = host.HostIDWithContext(ctx); err != nil {
		return nil, err
	}
	return ret, nil
}

// hostPath is path below the directory gopsutil reads for root (HOST_ETC,
// HOST_PROC), default def.
func hostPath(env, def string, path ...string) string {
	root := os.Getenv(env)
	if root == "" {
		root = def
	}
	return filepath.Join(append([]string{root}, path...)...)
}

// debianPlatform is gopsutil's answer on Debian (and Raspbian) in the case
// where it would run lsb_release: no lsb-release file, lsb_release
// installed, a debian_version file and none of the files gopsutil looks at
// before it. ok is false in every other case.
func debianPlatform() (platform, family, version string, ok bool) {
	etc := func(name string) string { return hostPath("HOST_ETC", "/etc", name) }
	if exists(etc("lsb-release")) || !exists(lsbRelease) {
		return "", "", "", false
	}
	for _, f := range []string{"oracle-release", "enterprise-release", "slackware-version"} {
		if hasContents(etc(f)) {
			return "", "", "", false
		}
	}
	if !hasContents(etc("debian_version")) {
		return "", "", "", false
	}
	// lsb_release names the distributor from os-release; gopsutil treats
	// derivatives (Ubuntu, Mint, ...) apart, so only Debian and Raspbian
	// are answered here.
	switch osReleaseID(etc("os-release")) {
	case "debian", "raspbian":
	default:
		return "", "", "", false
	}
	platform = "debian"
	if hasContents("/usr/bin/raspi-config") {
		platform = "raspbian"
	}
	if b, err := os.ReadFile(etc("debian_version")); err == nil {
		version, _, _ = strings.Cut(string(b), "\n")
	}
	return platform, "debian", version, true
}

// osReleaseID is the ID of an os-release file, "" when it has none.
func osReleaseID(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		b, err = os.ReadFile("/usr/lib/os-release")
		if err != nil {
			return ""
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "ID="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// hasContents is gopsutil's test for a release file: a file of more than
// four bytes.
func hasContents(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Size() > 4
}

// numProcs counts the processes in /proc (HOST_PROC), as gopsutil does.
func numProcs() (uint64, error) {
	f, err := os.Open(hostPath("HOST_PROC", "/proc"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, name := range names {
		if _, err := strconv.ParseUint(name, 10, 64); err == nil {
			n++
		}
	}
	return n, nil
}
