package templates

import (
	"testing"

	"github.com/Masterminds/sprig/v3"
)

// TestSeqAsSprig checks that the sandbox's seq gives what Sprig's gives.
func TestSeqAsSprig(t *testing.T) {
	seq := sprig.TxtFuncMap()["seq"].(func(...int) string)
	for _, p := range [][]int{{}, {0}, {1}, {5}, {-3}, {2, 6}, {6, 2}, {3, 3}, {1, 2, 9}, {9, -2, 1}, {1, -2, 9}, {9, 2, 1}, {1, 0, 5}, {0, 3, 10}, {-5, 2, 5}, {4, 1, 2, 3}} {
		got, err := boundedSeq(NewBudget(), p...)
		if err != nil {
			t.Fatalf("seq %v: %v", p, err)
		}
		if want := seq(p...); got != want {
			t.Errorf("seq %v = %q, Sprig gives %q", p, got, want)
		}
	}
	for _, p := range [][]int{{1000000000000, 0}, {1000000000000}, {0, 1000000000000}, {-1 << 62, 1 << 62}} {
		if _, err := boundedSeq(NewBudget(), p...); err == nil {
			t.Errorf("seq %v: no limit", p)
		}
	}
}
