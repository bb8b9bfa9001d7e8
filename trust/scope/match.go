package scope

import "strings"

// Wildcard words of a command pattern.
const (
	// wildOne stands for exactly one argument.
	wildOne = "*"
	// wildRest, last, stands for any number of arguments, none included.
	wildRest = "**"
)

// pattern is one compiled command pattern.
type pattern struct {
	rule  string // e.g. exec.commands[0]
	raw   string // as written
	words []string
}

// word is one argument as judged: its text, or a value not known before
// the command runs (the file a scaffold post command is given), which
// only a wildcard matches.
type word struct {
	text    string
	unknown bool
}

// matchArgs reports whether the pattern's arguments (its words after the
// executable) match args, and for each arg whether a wildcard matched it.
func (p pattern) matchArgs(args []word) (bool, []bool) {
	pw := p.words[1:]
	wild := make([]bool, len(args))
	for i, w := range pw {
		switch {
		case w == wildRest:
			for j := i; j < len(args); j++ {
				wild[j] = true
			}
			return true, wild
		case i >= len(args):
			return false, nil
		case w == wildOne:
			wild[i] = true
		case args[i].unknown || args[i].text != w:
			return false, nil
		}
	}
	return len(pw) == len(args), wild
}

// covers reports whether every command p matches, q (a deny pattern)
// matches too: same executable, and each word of p covered by q's.
func (q pattern) covers(p pattern) bool {
	if q.words[0] != p.words[0] {
		return false
	}
	qw, pw := q.words[1:], p.words[1:]
	for i, w := range qw {
		switch {
		case w == wildRest:
			return true
		case i >= len(pw), pw[i] == wildRest:
			return false
		case w == wildOne:
		case pw[i] == wildOne || pw[i] != w:
			return false
		}
	}
	return len(qw) == len(pw)
}

// globMatch reports whether name matches glob, where "*" matches any text
// (none included) and every other character itself.
func globMatch(glob, name string) bool {
	return globTokens(glob, []rune(name), nil)
}

// globCovers reports whether every name allow matches, deny matches too:
// deny matches allow's text with each "*" of allow only taken by a "*" of
// deny.
func globCovers(deny, allow string) bool {
	text := []rune(allow)
	star := make([]bool, len(text))
	for i, r := range text {
		star[i] = r == '*'
	}
	return globTokens(deny, text, star)
}

// globTokens matches glob against text; star marks the positions of text
// that are themselves wildcards (nil: none), which only a "*" of glob may
// take.
func globTokens(glob string, text []rune, star []bool) bool {
	g := []rune(glob)
	gi, ti := 0, 0
	nextG, nextT := -1, -1
	isStar := func(i int) bool { return star != nil && star[i] }
	for ti < len(text) || gi < len(g) {
		if gi < len(g) {
			switch {
			case g[gi] == '*':
				nextG, nextT = gi, ti+1
				gi++
				continue
			case ti < len(text) && !isStar(ti) && g[gi] == text[ti]:
				gi++
				ti++
				continue
			}
		}
		if nextT > 0 && nextT <= len(text) {
			gi, ti = nextG, nextT
			continue
		}
		return false
	}
	return true
}

// within reports whether path is prefix or below it, component-wise; both
// are clean absolute paths.
func within(path, prefix string) bool {
	return path == prefix || prefix == "/" || strings.HasPrefix(path, prefix+"/")
}
