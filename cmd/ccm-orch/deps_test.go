package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// forbiddenDeps are what ccm-orch, a client, must not link: the agent
// (its scope rules and policy subpackages are fine), the resource
// providers, the NATS server, the benchmark and the embedded broker.
// ccm-broker and ccm-bench carry them.
var forbiddenDeps = []string{
	"github.com/ccm-fleet/ccm/agent",
	"github.com/ccm-fleet/ccm/providers/...",
	"github.com/nats-io/nats-server/v2/...",
	"github.com/ccm-fleet/ccm/bench/...",
	"github.com/ccm-fleet/ccm/broker/...",
}

// toleratedDeps are import edges the walk does not follow, each with why:
// what they lead to is known and small, and a new path to a forbidden
// package still fails.
var toleratedDeps = map[[2]string]string{
	// none today: the engine no longer imports the process runner (it
	// declares engine.HealthRunner, which providers implement).
}

// forbidden reports whether pkg is one of forbiddenDeps.
func forbidden(pkg string) bool {
	for _, f := range forbiddenDeps {
		if base, ok := strings.CutSuffix(f, "/..."); ok {
			if pkg == base || strings.HasPrefix(pkg, base+"/") {
				return true
			}
		} else if pkg == f {
			return true
		}
	}
	return false
}

// The operator's binary links none of forbiddenDeps, as go list -deps
// sees its imports (tests excluded). A failure names each forbidden
// package and the chain of imports that brings it in.
func TestCCMOrchLinksNoServerSide(t *testing.T) {
	// go test puts its own go command first on PATH.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list ccm-orch's imports: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	imports := map[string][]string{}
	var root string
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		imports[f[0]] = f[1:]
		root = f[0] // go list -deps prints the package itself last
	}
	if root != "github.com/ccm-fleet/ccm/cmd/ccm-orch" {
		t.Fatalf("go list -deps ended with %q, not ccm-orch", root)
	}
	// Walk the imports from ccm-orch, breadth first, keeping how each
	// package was reached.
	from := map[string]string{root: ""}
	queue := []string{root}
	var bad []string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if forbidden(p) {
			bad = append(bad, p)
			continue
		}
		for _, q := range imports[p] {
			if _, seen := from[q]; seen {
				continue
			}
			if why, ok := toleratedDeps[[2]string{p, q}]; ok {
				t.Logf("not followed: %s imports %s (%s)", p, q, why)
				continue
			}
			from[q] = p
			queue = append(queue, q)
		}
	}
	slices.Sort(bad)
	for _, p := range bad {
		chain := []string{p}
		for q := from[p]; q != ""; q = from[q] {
			chain = append(chain, q)
		}
		slices.Reverse(chain)
		t.Errorf("ccm-orch links %s: %s", p, strings.Join(chain, " -> "))
	}
}
