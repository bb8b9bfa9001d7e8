package codecheck

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// LayerMap places every package of the repository in a layer. A package
// may import packages of its own layer and of the layers below it, never
// one above. docs/development.md holds the map as a table ("## The map"):
// the first cell "N name", the second the packages in backticks, where
// "dir/..." is dir and every package below it, and the most specific
// entry wins.
type LayerMap struct {
	Names []string // by layer number
	// patterns maps a package or "dir/..." to its layer
	patterns map[string]int
}

// mapHeading opens the table in docs/development.md.
const mapHeading = "## The map"

var (
	layerCell = regexp.MustCompile(`^(\d+) (.+)$`)
	pkgCode   = regexp.MustCompile("`([^`]+)`")
)

// ParseLayerMap reads the table under "## The map" in md.
func ParseLayerMap(md []byte) (LayerMap, error) {
	m := LayerMap{patterns: map[string]int{}}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == mapHeading:
			in = true
			continue
		case !in:
			continue
		case strings.HasPrefix(line, "#"):
			in = false
			continue
		case !strings.HasPrefix(line, "|"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 2 {
			continue
		}
		lm := layerCell.FindStringSubmatch(strings.TrimSpace(cells[0]))
		if lm == nil {
			continue // the header and its rule
		}
		n, _ := strconv.Atoi(lm[1])
		for len(m.Names) <= n {
			m.Names = append(m.Names, "")
		}
		m.Names[n] = lm[2]
		for _, p := range pkgCode.FindAllStringSubmatch(cells[1], -1) {
			if prev, ok := m.patterns[p[1]]; ok {
				return m, fmt.Errorf("the map places %s in layers %d and %d", p[1], prev, n)
			}
			m.patterns[p[1]] = n
		}
	}
	if len(m.patterns) == 0 {
		return m, fmt.Errorf("no layer table under %q", mapHeading)
	}
	return m, nil
}

// entry returns the map's entry that places pkg ("dir/..." or the
// package itself), "" when none does.
func (m LayerMap) entry(pkg string) string {
	if _, ok := m.patterns[pkg]; ok {
		return pkg
	}
	best := ""
	for p := range m.patterns {
		dir, ok := strings.CutSuffix(p, "/...")
		if ok && (pkg == dir || strings.HasPrefix(pkg, dir+"/")) && len(p) > len(best) {
			best = p
		}
	}
	return best
}

// Layer returns the layer of pkg (a path relative to the module) by its
// most specific entry.
func (m LayerMap) Layer(pkg string) (int, bool) {
	e := m.entry(pkg)
	if e == "" {
		return 0, false
	}
	return m.patterns[e], true
}

// Check returns a finding for each package of imports (package → the
// module's packages it imports, paths relative to the module) the map does
// not place, and for each import of a package from a higher layer.
func (m LayerMap) Check(imports map[string][]string) []string {
	var found []string
	name := func(n int) string { return fmt.Sprintf("%d %s", n, m.Names[n]) }
	for pkg, deps := range imports {
		from, ok := m.Layer(pkg)
		if !ok {
			found = append(found, pkg+": not on the map")
			continue
		}
		for _, d := range deps {
			to, ok := m.Layer(d)
			if ok && to > from {
				found = append(found, fmt.Sprintf("%s (layer %s) imports %s (layer %s)", pkg, name(from), d, name(to)))
			}
		}
	}
	found = append(found, m.circles(imports)...)
	slices.Sort(found)
	return found
}

// circles reports each pair of the map's entries whose packages import
// each other (agent/... importing continuous while continuous imports a
// package below agent/): Go refuses a cycle of packages, but folders that
// lean on each other are one room with two doors.
func (m LayerMap) circles(imports map[string][]string) []string {
	edges := map[[2]string][2]string{} // entry pair → one package import
	for pkg, deps := range imports {
		from := m.entry(pkg)
		for _, d := range deps {
			if to := m.entry(d); from != "" && to != "" && from != to {
				edges[[2]string{from, to}] = [2]string{pkg, d}
			}
		}
	}
	var found []string
	for pair, imp := range edges {
		back, ok := edges[[2]string{pair[1], pair[0]}]
		if ok && pair[0] < pair[1] {
			found = append(found, fmt.Sprintf("%s and %s import each other (%s imports %s, %s imports %s)",
				pair[0], pair[1], imp[0], imp[1], back[0], back[1]))
		}
	}
	return found
}
