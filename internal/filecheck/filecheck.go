package filecheck

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ccm-fleet/ccm/protocol"
)

// ReadBounded reads at most limit bytes of path; a larger file is an error.
func ReadBounded(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}

// Error is a problem with a file: its text is only the problem, so the
// caller's one line reads `policy PATH: signers[0]: unknown key "colour"`,
// and it matches its sentinel (ErrConfig, ErrPolicy) and its cause with
// errors.Is.
type Error struct {
	Msg      string
	Sentinel error
	Cause    error
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Sentinel}
	}
	return []error{e.Sentinel, e.Cause}
}

// Wrap is err as a problem of a file, matching sentinel.
func Wrap(sentinel, err error) error {
	return &Error{Msg: err.Error(), Sentinel: sentinel, Cause: err}
}

// Decode words a decoding error of a file: the key path as written and the
// problem (see protocol.Error.KeyMessage).
func Decode(sentinel, err error) error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return &Error{Msg: pe.KeyMessage(), Sentinel: sentinel, Cause: err}
	}
	return Wrap(sentinel, err)
}
