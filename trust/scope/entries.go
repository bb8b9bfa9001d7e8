package scope

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kballard/go-shellquote"

	"github.com/ccm-fleet/ccm/resources/exectype"
)

// compileList checks each entry of a list with check, which returns the
// entry's canonical form, and refuses duplicates.
func compileList(rule string, list []string, check func(string) (string, error)) ([]entry, error) {
	if len(list) > MaxEntries {
		return nil, bad("%s: %d entries, at most %d", rule, len(list), MaxEntries)
	}
	out := make([]entry, 0, len(list))
	for i, raw := range list {
		where := fmt.Sprintf("%s[%d]", rule, i)
		if len(raw) > MaxEntryBytes {
			return nil, bad("%s: longer than %d bytes", where, MaxEntryBytes)
		}
		v, err := check(raw)
		if err != nil {
			return nil, bad("%s %.80q: %s", where, raw, err)
		}
		for _, e := range out {
			if e.value == v {
				return nil, bad("%s %.80q: the same as %s, so it can never decide anything", where, raw, e.rule)
			}
		}
		out = append(out, entry{rule: where, value: v, raw: raw})
	}
	return out, nil
}

// noDuplicates refuses a list holding the same value twice.
func noDuplicates(rule string, list []string) error {
	for i, v := range list {
		if j := slices.Index(list[:i], v); j >= 0 {
			return bad("%s[%d] %.80q: the same as %s[%d]", rule, i, v, rule, j)
		}
	}
	return nil
}

// checkDir checks an absolute path and returns it cleaned.
func checkDir(s string) (string, error) {
	switch {
	case s == "":
		return "", errors.New("empty")
	case strings.ContainsRune(s, 0):
		return "", errors.New("contains a NUL byte")
	case !filepath.IsAbs(s):
		return "", errors.New("not an absolute path")
	case strings.ContainsAny(s, "*?["):
		return "", errors.New("paths are prefixes, not globs: leave out * ? [")
	}
	return filepath.Clean(s), nil
}

// checkSearchPath checks a colon separated list of absolute directories
// and returns it with each cleaned.
func checkSearchPath(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty")
	}
	dirs := strings.Split(s, ":")
	for i, d := range dirs {
		c, err := checkDir(d)
		if err != nil {
			return "", fmt.Errorf("directory %q: %w", d, err)
		}
		dirs[i] = c
	}
	return strings.Join(dirs, ":"), nil
}

// checkGlob checks a name glob.
func checkGlob(s string) (string, error) {
	switch {
	case s == "":
		return "", errors.New("empty")
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "", errors.New("contains white space or a control character")
	}
	return s, nil
}

// checkEnv checks a KEY=VALUE-glob entry.
func checkEnv(s string) (string, error) {
	key, _, ok := strings.Cut(s, "=")
	switch {
	case !ok:
		return "", errors.New("not KEY=VALUE (use KEY=* for any value)")
	case !exectype.ValidEnvKey(key):
		return "", fmt.Errorf("key %q is not a variable name", key)
	case strings.ContainsRune(s, 0):
		return "", errors.New("contains a NUL byte")
	}
	return s, nil
}

// compilePatterns checks and splits command patterns.
func compilePatterns(rule string, list []string) ([]pattern, error) {
	if len(list) > MaxEntries {
		return nil, bad("%s: %d entries, at most %d", rule, len(list), MaxEntries)
	}
	out := make([]pattern, 0, len(list))
	for i, raw := range list {
		where := fmt.Sprintf("%s[%d]", rule, i)
		if len(raw) > MaxEntryBytes {
			return nil, bad("%s: longer than %d bytes", where, MaxEntryBytes)
		}
		p, err := parsePattern(raw)
		if err != nil {
			return nil, bad("%s %.80q: %s", where, raw, err)
		}
		p.rule = where
		for _, q := range out {
			if slices.Equal(q.words, p.words) {
				return nil, bad("%s %.80q: the same as %s, so it can never decide anything", where, raw, q.rule)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// parsePattern splits a command pattern: words with shell-like quoting,
// the first an absolute executable (cleaned), "**" only last.
func parsePattern(raw string) (pattern, error) {
	if strings.ContainsRune(raw, 0) {
		return pattern{}, errors.New("contains a NUL byte")
	}
	words, err := shellquote.Split(raw)
	if err != nil {
		return pattern{}, err
	}
	if len(words) == 0 {
		return pattern{}, errors.New("empty")
	}
	switch exe := words[0]; {
	case exe == wildOne || exe == wildRest:
		return pattern{}, errors.New("the executable must be written out, not a wildcard")
	case !filepath.IsAbs(exe):
		return pattern{}, errors.New("the executable must be an absolute path")
	}
	words[0] = filepath.Clean(words[0])
	for i, w := range words {
		if w == wildRest && i != len(words)-1 {
			return pattern{}, errors.New(`"**" stands for the remaining arguments: it must be the last word`)
		}
	}
	return pattern{raw: raw, words: words}, nil
}
