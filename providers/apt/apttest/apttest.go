package apttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// TB is the part of a test that Setup needs. GinkgoT() and *testing.T
// satisfy it.
type TB interface {
	Helper()
	TempDir() string
	Cleanup(func())
	Logf(format string, args ...any)
	// Errorf reports a failure without stopping the caller; Setup's
	// cleanup uses it when the host is not clean afterwards.
	Errorf(format string, args ...any)
}

const (
	packageName = "ccm-fleet-testpkg"
	conffile    = "/etc/ccm-fleet-testpkg.conf"
	dataFile    = "/usr/share/ccm-fleet-testpkg/VERSION"
	sourceList  = "/etc/apt/sources.list.d/ccm-fleet-test.list"
	// sourceListRel is sourceList relative to apt's Dir::Etc.
	sourceListRel = "sources.list.d/ccm-fleet-test.list"
	repoPattern   = "ccm-fleet-testrepo-*"
	listsGlob     = "/var/lib/apt/lists/_tmp_ccm-fleet-testrepo-*"
	lockName      = "ccm-fleet-apt-test.lock"
	// cleanupTimeout bounds the cleanup run after the test, whose own
	// context is usually over by then.
	cleanupTimeout = time.Minute
)

// builtVersions are the versions Setup builds, oldest first.
func builtVersions() []string { return []string{"1.0-1", "2.0-1"} }

// requiredTools are the commands Setup and the apt provider run.
func requiredTools() []string {
	return []string{"dpkg-deb", "dpkg", "dpkg-query", "apt-get", "apt-cache"}
}

// Repo is a local apt repository holding every version of the test
// package, registered as an apt source. It is valid until the test that
// made it ends.
type Repo struct {
	dir string
}

// Available reports whether Setup can work on this host. When it cannot,
// reason says why, in words fit for the failure of a spec that needs it.
func Available() (reason string, ok bool) {
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Sprintf("installing packages needs root; this test runs as uid %d", uid), false
	}
	for _, tool := range requiredTools() {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not installed, so no package can be built or installed here", false
		}
	}
	return "", true
}

// Setup takes the machine-wide lock, removes anything an earlier run left
// behind, builds every version of the test package into a new local
// repository, registers it as an apt source and refreshes that source's
// index. Through t.Cleanup it then purges the package, removes the source,
// its lists and the repository, reports through t.Errorf if the host is
// not clean afterwards, and releases the lock.
//
// It returns an error wrapping ErrUnavailable when Available reports
// false. Once the lock is taken the cleanup is registered, so a failure
// later in Setup still leaves the host clean.
func Setup(ctx context.Context, t TB) (*Repo, error) {
	t.Helper()
	if reason, ok := Available(); !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, reason)
	}
	release, err := lockHost(ctx)
	if err != nil {
		return nil, fmt.Errorf("apttest: %w", err)
	}
	t.Cleanup(func() {
		defer release()
		cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		cleanUpHost(cctx, t)
		if err := checkClean(cctx); err != nil {
			t.Errorf("apttest: after cleanup: %v", err)
		}
	})
	cleanUpHost(ctx, t)

	r, err := newRepo(ctx, t.TempDir())
	if err != nil {
		return nil, fmt.Errorf("apttest: %w", err)
	}
	if err := r.register(ctx); err != nil {
		return nil, fmt.Errorf("apttest: %w", err)
	}
	t.Logf("apttest: repository %s registered as %s with %s %v", r.dir, sourceList, packageName, builtVersions())
	return r, nil
}

// PackageName is the name of the test package.
func (r *Repo) PackageName() string { return packageName }

// Versions are the versions of the package the repository holds, oldest
// first; the last is apt's candidate.
func (r *Repo) Versions() []string { return builtVersions() }

// Dir is the repository's directory.
func (r *Repo) Dir() string { return r.dir }

// SourceList is the apt sources file that registers the repository.
func (r *Repo) SourceList() string { return sourceList }

// Conffile is the package's conffile, which removal keeps and purge
// deletes.
func (r *Repo) Conffile() string { return conffile }

// DataFile is a file the package installs holding its version and a
// newline.
func (r *Repo) DataFile() string { return dataFile }

// InstalledVersion is the version of the package dpkg reports installed,
// or "" when it is not installed (never was, purged, or only its conffiles
// remain).
func (r *Repo) InstalledVersion(ctx context.Context) (string, error) {
	version, status, err := dpkgStatus(ctx)
	if err != nil {
		return "", fmt.Errorf("apttest: %w", err)
	}
	if status != "installed" {
		return "", nil
	}
	return version, nil
}

// DpkgState is what dpkg records about the package as "<version>
// <status>" (e.g. "2.0-1 installed", "2.0-1 config-files"), or "unknown"
// when dpkg has no record of it.
func (r *Repo) DpkgState(ctx context.Context) (string, error) {
	version, status, err := dpkgStatus(ctx)
	if err != nil {
		return "", fmt.Errorf("apttest: %w", err)
	}
	if status == "" {
		return "unknown", nil
	}
	return version + " " + status, nil
}
