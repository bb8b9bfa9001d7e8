package proctest_test

import (
	"slices"
	"testing"

	"github.com/ccm-fleet/ccm/internal/proctest"
)

func TestCompleteLines(t *testing.T) {
	for _, c := range []struct {
		data string
		want []string
	}{
		{"", nil},
		{`{"a":1`, nil},
		{"{\"a\":1}\n", []string{`{"a":1}`}},
		{"{\"a\":1}\n{\"b\":", []string{`{"a":1}`}},
		{"one\ntwo\n", []string{"one", "two"}},
	} {
		if got := proctest.CompleteLines([]byte(c.data)); !slices.Equal(got, c.want) {
			t.Errorf("CompleteLines(%q) = %q, want %q", c.data, got, c.want)
		}
	}
}
