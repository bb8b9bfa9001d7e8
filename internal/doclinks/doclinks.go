package doclinks

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// ErrBroken is returned (wrapped, with every broken link named) by Check
// when a link does not resolve.
var ErrBroken = errors.New("broken links")

// maxDocBytes bounds the size of one document read.
const maxDocBytes = 4 << 20

// Link is one relative link of a document.
type Link struct {
	File   string // the document, as given to Check
	Line   int    // 1-based
	Target string // as written: path, path#anchor or #anchor
}

var (
	linkRE = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeRE = regexp.MustCompile("`+[^`]*`+")
	headRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	// A link inside a heading keeps its text in the anchor.
	headLinkRE = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// Check reads each document (paths relative to root) and returns an error
// wrapping ErrBroken that names every relative link whose file or anchor
// does not exist.
func Check(root string, docs []string) error {
	var broken []string
	anchors := map[string]map[string]bool{}
	for _, doc := range docs {
		links, err := Links(root, doc)
		if err != nil {
			return err
		}
		for _, l := range links {
			if msg := resolve(root, l, anchors); msg != "" {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: %s", l.File, l.Line, l.Target, msg))
			}
		}
	}
	if len(broken) > 0 {
		return fmt.Errorf("%w:\n%s", ErrBroken, strings.Join(broken, "\n"))
	}
	return nil
}

// Links returns the relative links of one document, outside fenced code
// blocks and code spans.
func Links(root, doc string) ([]Link, error) {
	lines, err := readLines(filepath.Join(root, doc))
	if err != nil {
		return nil, err
	}
	var out []Link
	for i, line := range prose(lines) {
		text := codeRE.ReplaceAllString(line, "")
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if isExternal(target) {
				continue
			}
			out = append(out, Link{File: doc, Line: i + 1, Target: target})
		}
	}
	return out, nil
}

// Anchors returns the heading anchors of a Markdown document as GitHub
// spells them (a repeated heading gets -1, -2, …).
func Anchors(path string) (map[string]bool, error) {
	lines, err := readLines(path)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range prose(lines) {
		m := headRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := Slug(m[2])
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out, nil
}

// Slug is the anchor GitHub gives a heading: its text lower-cased, links
// reduced to their text, every character but letters, digits, '-', '_'
// and spaces dropped, spaces turned into '-'.
func Slug(heading string) string {
	heading = headLinkRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func resolve(root string, l Link, anchors map[string]map[string]bool) string {
	path, anchor, _ := strings.Cut(l.Target, "#")
	file := filepath.Join(root, l.File)
	if path != "" {
		file = filepath.Join(root, filepath.Dir(l.File), filepath.FromSlash(path))
	}
	st, err := os.Stat(file)
	if err != nil {
		return "no such file"
	}
	if anchor == "" {
		return ""
	}
	if st.IsDir() || !strings.HasSuffix(file, ".md") {
		return "an anchor into something that is not a Markdown file"
	}
	set, ok := anchors[file]
	if !ok {
		set, err = Anchors(file)
		if err != nil {
			return err.Error()
		}
		anchors[file] = set
	}
	if !set[anchor] {
		return "no heading with this anchor"
	}
	return ""
}

func isExternal(target string) bool {
	for _, p := range []string{"http://", "https://", "mailto:"} {
		if strings.HasPrefix(target, p) {
			return true
		}
	}
	return false
}

// prose yields the lines of a document outside its fenced code blocks,
// with their index.
func prose(lines []string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		fence := ""
		for i, line := range lines {
			if f := fenceOf(line); f != "" {
				switch {
				case fence == "":
					fence = f
				case strings.HasPrefix(strings.TrimSpace(line), fence):
					fence = ""
				}
				continue
			}
			if fence == "" && !yield(i, line) {
				return
			}
		}
	}
}

func fenceOf(line string) string {
	t := strings.TrimSpace(line)
	for _, f := range []string{"```", "~~~"} {
		if strings.HasPrefix(t, f) {
			return f
		}
	}
	return ""
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("document %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxDocBytes+1))
	if err != nil {
		return nil, fmt.Errorf("document %s: %w", path, err)
	}
	if len(data) > maxDocBytes {
		return nil, fmt.Errorf("document %s: larger than %d bytes", path, maxDocBytes)
	}
	return strings.Split(string(data), "\n"), nil
}
