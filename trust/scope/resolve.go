package scope

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ccm-fleet/ccm/internal/nolinks"
)

// maxLinks bounds the symbolic links followed resolving one path, as the
// kernel does (ELOOP).
const maxLinks = 40

// DefaultShell is the shell of the exec shell provider.
const DefaultShell = "/bin/sh"

// Resolver finds commands and paths the way the host will when the
// resource runs.
type Resolver struct {
	// SearchPath is the PATH a scaffold post command without a slash is
	// looked up in: the agent's own, as the scaffold library runs them.
	// Exec commands and guards are looked up where the exec provider
	// looks: the resource's path, else exectype.BasePath.
	SearchPath string
	// Shell is what the exec shell provider runs a command line with.
	Shell string
	// WorkingDir is the directory a resource's relative sources are
	// joined to: the one its request's files were written to, "" when
	// it brought none.
	WorkingDir string
	// memo, when set, keeps what one judgement resolved (see judgement).
	memo pathMemo
}

// pathMemo keeps the paths one judgement resolved, with their errors.
type pathMemo map[memoKey]memoResult

type memoKey struct {
	path       string
	followLast bool
}

type memoResult struct {
	path string
	err  error
}

// maxMemo bounds what one judgement keeps; past it, paths are resolved
// again each time.
const maxMemo = 256

// judgement returns r keeping, for one judgement of one resource, where
// each path it resolves leads: the resource's path and each of the
// policy's own paths are then resolved once per resource, not once per
// rule or form that names them. What a judgement sees of the host is one
// reading of it, as a single pass over the rules would be; the next
// judgement reads again.
func (r Resolver) judgement() Resolver {
	if r.memo == nil {
		r.memo = pathMemo{}
	}
	return r
}

// resolve is resolvePath, kept by the judgement r belongs to, if any.
func (r Resolver) resolve(p string, followLast bool) (string, error) {
	if r.memo == nil {
		return resolvePath(p, followLast)
	}
	k := memoKey{p, followLast}
	if v, ok := r.memo[k]; ok {
		return v.path, v.err
	}
	to, err := resolvePath(p, followLast)
	if len(r.memo) < maxMemo {
		r.memo[k] = memoResult{to, err}
	}
	return to, err
}

// HostResolver resolves on this host, with this process's PATH.
func HostResolver() Resolver {
	return Resolver{SearchPath: os.Getenv("PATH"), Shell: DefaultShell}
}

// resolvedCommand is an executable as it will run: invoked is the
// absolute path it is started by (after the PATH lookup, its directories'
// links resolved: the name a multi-call binary such as busybox sees),
// target the file that runs (every link resolved).
type resolvedCommand struct {
	invoked, target string
}

// command resolves the executable name of a command, looked up in
// searchPath (the Resolver's when empty) when it has no slash.
func (r Resolver) command(name, searchPath string) (resolvedCommand, error) {
	var abs string
	switch {
	case name == "":
		return resolvedCommand{}, errors.New("empty command")
	case strings.Contains(name, "/") && !filepath.IsAbs(name):
		return resolvedCommand{}, fmt.Errorf("%q is a relative path: write the executable's absolute path", name)
	case strings.Contains(name, "/"):
		abs = name
	default:
		if searchPath == "" {
			searchPath = r.SearchPath
		}
		found, err := lookPath(name, searchPath)
		if err != nil {
			return resolvedCommand{}, err
		}
		abs = found
	}
	invoked, err := r.resolve(abs, false)
	if err != nil {
		return resolvedCommand{}, err
	}
	target, err := r.resolve(abs, true)
	if err != nil {
		return resolvedCommand{}, err
	}
	if fi, err := os.Stat(target); err != nil || !fi.Mode().IsRegular() {
		return resolvedCommand{}, fmt.Errorf("%s is not an executable file on this host", name)
	}
	return resolvedCommand{invoked: invoked, target: target}, nil
}

// pattern resolves a pattern's executable; one that does not exist on
// this host stays as written (it then matches nothing that runs).
func (r Resolver) pattern(exe string) resolvedCommand {
	invoked, err1 := r.resolve(exe, false)
	target, err2 := r.resolve(exe, true)
	if err1 != nil || err2 != nil {
		return resolvedCommand{invoked: exe, target: exe}
	}
	return resolvedCommand{invoked: invoked, target: target}
}

// lookPath finds name in the absolute directories of searchPath: the first
// regular file with an execute bit, as the command runner looks.
func lookPath(name, searchPath string) (string, error) {
	for _, dir := range filepath.SplitList(searchPath) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not found in %q", name, searchPath)
}

// resolvePath returns where the absolute path p leads on this host: each
// component's symbolic link is followed (the last one only when
// followLast) and ".." taken physically, as the kernel walks it; the part
// that does not exist is kept as written.
func resolvePath(p string, followLast bool) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q is not an absolute path", p)
	}
	if r, ok := resolveFast(p, followLast); ok {
		return r, nil
	}
	parts := strings.Split(p, "/")
	cur := "/"
	links := 0
	for i := 0; i < len(parts); i++ {
		c := parts[i]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		if !followLast && lastComponent(parts[i+1:]) {
			cur = next
			continue
		}
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			cur = next
			continue
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink == 0:
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		parts = append(strings.Split(target, "/"), parts[i+1:]...)
		i = -1
	}
	return cur, nil
}

// lastComponent reports whether rest holds no further name.
func lastComponent(rest []string) bool {
	for _, c := range rest {
		if c != "" && c != "." {
			return false
		}
	}
	return true
}

// resolveFast is resolveNoLinks; specs and benchmarks replace it to compare
// with the walk alone.
var resolveFast = resolveNoLinks

// resolveNoLinks is resolvePath's common case in two system calls instead
// of an lstat per component: a clean path whose directories all exist and
// none of which is a link (nolinks.OpenDir says so)
// leads to itself, when its last component is not a link either (or does
// not exist, or is not followed). Anything else reports !ok, and the
// component-by-component walk decides. A path that is not clean is left to
// the walk too, since ".." after a link is taken physically.
func resolveNoLinks(p string, followLast bool) (string, bool) {
	if p == "/" || p != filepath.Clean(p) {
		return "", false
	}
	dir, last := filepath.Split(p)
	fd, ok := nolinks.OpenDir(dir)
	if !ok {
		return "", false
	}
	defer unix.Close(fd)
	if !followLast {
		return p, true
	}
	var st unix.Stat_t
	err := unix.Fstatat(fd, last, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return "", false
	case err == nil, errors.Is(err, unix.ENOENT):
		return p, true
	default:
		return "", false
	}
}
