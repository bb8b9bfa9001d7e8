package filetype

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/ccm-fleet/ccm/resources"
)

// MaxMode is the largest mode a file resource may ask for: setuid, setgid
// and the sticky bit cannot be set through mode.
const MaxMode = 0o777

// Mode is a file mode written as an octal string: "0644", "644", "0o755" or
// "0O700". Validate normalises it to four digits ("0644"), the form Status
// reports, so equal modes compare equal.
type Mode string

// UnmarshalJSON accepts a JSON string and rejects a number with a message
// that says how to fix it: YAML reads an unquoted 0644 as the number 420, so
// a number cannot be trusted to mean what was written.
func (m *Mode) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*m = ""
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("property mode: %w", err)
		}
		*m = Mode(s)
		return nil
	case len(b) > 0 && (b[0] == '-' || (b[0] >= '0' && b[0] <= '9')):
		return fmt.Errorf("property mode: got the number %s; mode must be a quoted octal string such as \"0644\" (in YAML an unquoted 0644 is read as the number 420)", b)
	default:
		return fmt.Errorf("property mode: expected a quoted octal string such as \"0644\", got %.32s", b)
	}
}

// ParseMode parses an octal mode string as accepted by the mode property and
// returns its permission bits. Errors wrap resources.ErrInvalid and name the
// property.
func ParseMode(s string) (fs.FileMode, error) {
	v, err := parseModeValue(s)
	if err != nil {
		return 0, err
	}
	return fs.FileMode(v), nil
}

// NormaliseMode returns mode s in four-digit octal form: "644", "0644",
// "0o644" and "0O644" all become "0644".
func NormaliseMode(s string) (string, error) {
	v, err := parseModeValue(s)
	if err != nil {
		return "", err
	}
	return FormatMode(v), nil
}

// FormatMode renders mode bits (permission bits, plus setuid, setgid and
// sticky as 04000, 02000 and 01000 when present) as four or more octal digits.
func FormatMode(bits uint32) string {
	return fmt.Sprintf("%04o", bits)
}

func parseModeValue(s string) (uint32, error) {
	digits := s
	if strings.HasPrefix(digits, "0o") || strings.HasPrefix(digits, "0O") {
		digits = digits[2:]
	}
	if digits == "" {
		return 0, resources.InvalidField("mode", "%q is not an octal number", s)
	}
	for _, r := range digits {
		if r < '0' || r > '7' {
			return 0, resources.InvalidField("mode", "%q is not an octal number: invalid digit %q", s, r)
		}
	}
	v, err := strconv.ParseUint(digits, 8, 32)
	if err != nil || v > MaxMode {
		return 0, resources.InvalidField("mode", "%q exceeds 0777; setuid, setgid and sticky bits cannot be set through mode", s)
	}
	return uint32(v), nil
}

// DirectoryMode returns mode s with the search (x) bit added wherever the
// read bit is granted, as CCM and Puppet do for directories: "0644" becomes
// "0755", "0640" becomes "0750", "0600" becomes "0700". A mode that does
// not parse is returned unchanged (validation reports it).
func DirectoryMode(s string) string {
	v, err := parseModeValue(s)
	if err != nil {
		return s
	}
	for _, rx := range [][2]uint32{{0o400, 0o100}, {0o040, 0o010}, {0o004, 0o001}} {
		if v&rx[0] != 0 {
			v |= rx[1]
		}
	}
	return FormatMode(v)
}
