package apttest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ccm-fleet/ccm/providers/apt"
)

// maxOutput bounds how much of a failed command's output goes into an
// error.
const maxOutput = 2048

// sh runs a command for setup or cleanup with the apt provider's
// non-interactive environment and returns its combined output.
func sh(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), apt.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, tail(out))
	}
	return string(out), nil
}

// tail is the last maxOutput bytes of out.
func tail(out []byte) []byte {
	if len(out) > maxOutput {
		return out[len(out)-maxOutput:]
	}
	return out
}

// LockHost takes the machine-wide lock on the host's package state that
// Setup takes, for other tests that install packages for real (the
// ccm-fleet package's), so that they never run dpkg at the same time as
// this one. It returns the release; it gives up when ctx ends.
func LockHost(ctx context.Context) (release func(), err error) { return lockHost(ctx) }

// lockHost takes the machine-wide exclusive lock on the host's package
// state and returns its release. It gives up when ctx ends; the lock, if
// it is granted later, is then released at once.
func lockHost(ctx context.Context) (func(), error) {
	path := filepath.Join(os.TempDir(), lockName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("host lock: %w", err)
	}
	release := func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}
	got := make(chan error, 1)
	go func() { got <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-got:
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("host lock %s: %w", path, err)
		}
		return release, nil
	case <-ctx.Done():
		go func() {
			if <-got == nil {
				release()
			} else {
				_ = f.Close()
			}
		}()
		return nil, fmt.Errorf("host lock %s: %w", path, ctx.Err())
	}
}

// cleanUpHost removes every trace of the test from the host: the package
// (with its conffile), the sources file, its package lists and the
// repository directories. Setup runs it before building too, in case an
// earlier run was killed. Failures are logged; checkClean judges the
// result.
func cleanUpHost(ctx context.Context, t TB) {
	if out, err := sh(ctx, "dpkg", append([]string{"--purge", packageName}, neighbours()...)...); err != nil {
		t.Logf("apttest: cleanup: %v", err)
	} else {
		t.Logf("apttest: cleanup: %s", strings.TrimSpace(out))
	}
	if err := os.Remove(sourceList); err != nil && !os.IsNotExist(err) {
		t.Logf("apttest: cleanup: %v", err)
	}
	lists, _ := filepath.Glob(listsGlob)
	repos, _ := filepath.Glob(filepath.Join(os.TempDir(), repoPattern))
	for _, p := range append(lists, repos...) {
		if err := os.RemoveAll(p); err != nil {
			t.Logf("apttest: cleanup: %v", err)
		}
	}
}

// checkClean returns an error unless dpkg has no record of the package and
// the sources file is gone.
func checkClean(ctx context.Context) error {
	version, status, err := dpkgStatus(ctx)
	switch {
	case err != nil:
		return err
	case status != "":
		return fmt.Errorf("dpkg still records %s as %s %s", packageName, version, status)
	}
	if err := checkNeighboursClean(ctx); err != nil {
		return err
	}
	if _, err := os.Lstat(sourceList); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s still exists (%v)", sourceList, err)
	}
	return nil
}

// dpkgStatus asks dpkg-query for the package's version and status word
// (installed, config-files, ...); status is "" when dpkg has no record.
func dpkgStatus(ctx context.Context) (version, status string, err error) {
	cmd := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Version} ${db:Status-Status}", "--", packageName)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			return "", "", nil // no package matched
		}
		return "", "", fmt.Errorf("dpkg-query %s: %w: %s", packageName, err, tail([]byte(stderr.String())))
	}
	version, status, _ = strings.Cut(strings.TrimSpace(string(out)), " ")
	if status == "" {
		status, version = version, ""
	}
	return version, status, nil
}

// newRepo builds every version of the package and writes a flat
// repository of them in a new directory under the temporary directory,
// using work for the build trees.
func newRepo(ctx context.Context, work string) (*Repo, error) {
	dir, err := os.MkdirTemp("", repoPattern)
	if err != nil {
		return nil, fmt.Errorf("repository: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // apt reads it as _apt
		return nil, fmt.Errorf("repository: %w", err)
	}
	var debs []string
	for _, v := range builtVersions() {
		deb, err := buildDeb(ctx, work, dir, packageName, v)
		if err != nil {
			return nil, err
		}
		debs = append(debs, deb)
	}
	for _, name := range neighbours() {
		deb, err := buildDeb(ctx, work, dir, name, neighbourVersion)
		if err != nil {
			return nil, err
		}
		debs = append(debs, deb)
	}
	if err := writeIndex(dir, debs); err != nil {
		return nil, err
	}
	return &Repo{dir: dir}, nil
}

// buildDeb builds the package name at version from a tree under work
// into dir and returns the .deb's file name. The test package installs one
// data file and one conffile; a neighbour installs only its marker file.
func buildDeb(ctx context.Context, work, dir, name, version string) (string, error) {
	root := filepath.Join(work, "build-"+name+"-"+version)
	files := map[string]string{
		"DEBIAN/control": fmt.Sprintf("Package: %s\nVersion: %s\nArchitecture: all\n"+
			"Maintainer: CCM Fleet Tests <tests@ccm-fleet.invalid>\n"+
			"Description: test package for the CCM Fleet apt provider\n", name, version),
	}
	if name == packageName {
		files["DEBIAN/conffiles"] = conffile + "\n"
		files[strings.TrimPrefix(conffile, "/")] = "setting = 1\n"
		files[strings.TrimPrefix(dataFile, "/")] = version + "\n"
	} else {
		files[strings.TrimPrefix(neighbourMarker(name), "/")] = name + "\n"
	}
	for path, content := range files {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", fmt.Errorf("build %s: %w", version, err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return "", fmt.Errorf("build %s: %w", version, err)
		}
	}
	deb := fmt.Sprintf("%s_%s_all.deb", name, version)
	if _, err := sh(ctx, "dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root, filepath.Join(dir, deb)); err != nil {
		return "", fmt.Errorf("build %s: %w", version, err)
	}
	if err := os.RemoveAll(root); err != nil {
		return "", fmt.Errorf("build %s: %w", version, err)
	}
	return deb, nil
}

// writeIndex writes a flat repository's Packages index of debs and a
// Release file listing it, so apt fetches exactly that.
func writeIndex(dir string, debs []string) error {
	var idx strings.Builder
	for _, deb := range debs {
		b, err := os.ReadFile(filepath.Join(dir, deb))
		if err != nil {
			return fmt.Errorf("repository index: %w", err)
		}
		sum := sha256.Sum256(b)
		name, version, _ := strings.Cut(strings.TrimSuffix(deb, "_all.deb"), "_")
		fmt.Fprintf(&idx, "Package: %s\nVersion: %s\nArchitecture: all\n"+
			"Maintainer: CCM Fleet Tests <tests@ccm-fleet.invalid>\nFilename: ./%s\nSize: %d\nSHA256: %s\n"+
			"Description: test package for the CCM Fleet apt provider\n\n",
			name, version, deb, len(b), hex.EncodeToString(sum[:]))
	}
	packages := []byte(idx.String())
	if err := os.WriteFile(filepath.Join(dir, "Packages"), packages, 0o644); err != nil {
		return fmt.Errorf("repository index: %w", err)
	}
	sum := sha256.Sum256(packages)
	release := fmt.Sprintf("Origin: ccm-fleet-test\nLabel: ccm-fleet-test\nDate: %s\nSHA256:\n %s %d Packages\n",
		time.Now().UTC().Format(time.RFC1123Z), hex.EncodeToString(sum[:]), len(packages))
	if err := os.WriteFile(filepath.Join(dir, "Release"), []byte(release), 0o644); err != nil {
		return fmt.Errorf("repository release: %w", err)
	}
	return nil
}

// register writes the apt source for the repository and refreshes only
// that source's index, leaving every other source's lists alone.
func (r *Repo) register(ctx context.Context) error {
	if err := os.WriteFile(sourceList, []byte("deb [trusted=yes] file:"+r.dir+" ./\n"), 0o644); err != nil {
		return fmt.Errorf("apt source: %w", err)
	}
	if _, err := sh(ctx, "apt-get", "update", "-q",
		"-o", "Dir::Etc::sourcelist="+sourceListRel,
		"-o", "Dir::Etc::sourceparts=-", "-o", "APT::Get::List-Cleanup=0"); err != nil {
		return fmt.Errorf("apt source: %w", err)
	}
	return nil
}
