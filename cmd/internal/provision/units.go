package provision

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// day is 24 hours, the "d" of --since and --max-age.
const day = 24 * time.Hour

// ParseAge reads a positive duration such as "24h", "90m" or "30d" (days).
func ParseAge(s string) (time.Duration, error) {
	var (
		d   time.Duration
		err error
	)
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var f float64
		f, err = strconv.ParseFloat(n, 64)
		d = time.Duration(f * float64(day))
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q: use a positive duration such as 24h, 90m or 30d", s)
	}
	return d, nil
}

// FormatAge writes a duration in whole days when it is some, else as Go does.
func FormatAge(d time.Duration) string {
	if d > 0 && d%day == 0 {
		return fmt.Sprintf("%dd", d/day)
	}
	return d.String()
}

// sizeUnits are the suffixes ParseSize accepts, longest first.
var sizeUnits = []struct {
	suffix string
	factor int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"TB", 1000 * 1000 * 1000 * 1000},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// ParseSize reads a byte size: "-1" (no limit), a number of bytes, or a
// number with a unit (KiB, MiB, GiB, TiB; KB, MB, GB, TB; K, M, G, T).
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "-1" {
		return -1, nil
	}
	factor := int64(1)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, factor = strings.TrimSpace(n), u.factor
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/factor {
		return 0, fmt.Errorf("%q: use a size such as 10GiB, 500MB or a number of bytes (-1: no limit)", s)
	}
	return n * factor, nil
}
