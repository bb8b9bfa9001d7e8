package codecheck

import (
	"go/ast"
	"go/token"
	"regexp"
)

// seedCitation matches a citation of a seed document: the word seed (or
// seeds) and a three-digit document number, a "#" allowed between, or a
// path into the seeds directory (the word and a slash). A seed of a
// signing key or of a fuzz corpus has no such number and is not matched.
var seedCitation = regexp.MustCompile(`(?i)\bseeds?[ \t]*#?[ \t]*\d{3}\b|\bseeds/`)

// seedCitations reports each comment of comments that cites a seed
// document: a reader cannot open it, so the comment should state the rule
// itself.
func seedCitations(fset *token.FileSet, rel string, comments []*ast.CommentGroup) []Finding {
	var out []Finding
	for _, g := range comments {
		for _, c := range g.List {
			for _, m := range seedCitation.FindAllStringIndex(c.Text, -1) {
				out = append(out, Finding{
					Path: rel,
					Line: fset.Position(c.Slash + token.Pos(m[0])).Line,
					Rule: RuleSeedCite,
					Code: c.Text[m[0]:m[1]],
				})
			}
		}
	}
	return out
}
