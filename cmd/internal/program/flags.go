package program

import (
	"fmt"
	"strings"
	"time"

	"github.com/choria-io/fisk"
)

// DurationVar binds the flag fc to target the way fisk's DurationVar does
// (fisk.ParseDuration: 90s, 2m, 1h30m, 1d), but refuses a value that is
// not a duration naming the flag and an example:
// `--reply-timeout: "10" is not a duration: give it a unit, e.g. 10s`, and
// a negative one (no duration flag means anything by one):
// `--reply-timeout -5s is negative: give 0 or more`. A sign may be given
// with or without `=` (`--ttl -1m`, `--ttl=+1m`): Run joins a signed
// value to its flag before parsing, so it is not read as a flag.
func DurationVar(fc *fisk.FlagClause, target *time.Duration) {
	fc.SetValue(&durationFlag{name: "--" + fc.Model().Name, d: target})
}

// durationFlag is a duration flag's value.
type durationFlag struct {
	name string
	d    *time.Duration
}

func (f *durationFlag) Set(s string) error {
	v, err := fisk.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%s: %q is not a duration: give it a unit, e.g. %s", f.name, s, durationExample(s))
	}
	if v < 0 {
		return fmt.Errorf("%s %s is negative: give 0 or more", f.name, strings.TrimSpace(s))
	}
	*f.d = v
	return nil
}

func (f *durationFlag) Get() any { return *f.d }

func (f *durationFlag) String() string { return f.d.String() }

// durationExample is the value a person most likely meant: a bare number
// in seconds, else a few forms.
func durationExample(s string) string {
	s = strings.TrimSpace(s)
	if s != "" && strings.Trim(s, "0123456789") == "" {
		return s + "s"
	}
	return "10s, 2m or 1h30m"
}
