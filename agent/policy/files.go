package policy

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ccm-fleet/ccm/protocol"
)

// readBounded reads at most limit bytes of path; a larger file is an error.
func readBounded(path string, limit int) ([]byte, error) {
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

// fileError is a problem with the policy file: its text is only the
// problem, so the caller's one line reads `policy PATH: signers[0]:
// unknown key "colour"`, and it matches ErrPolicy and its cause with
// errors.Is.
type fileError struct {
	msg      string
	sentinel error
	cause    error
}

func (e *fileError) Error() string { return e.msg }

func (e *fileError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.sentinel}
	}
	return []error{e.sentinel, e.cause}
}

// decodeError words a decoding error of a file: the key path as written
// and the problem (see protocol.Error.KeyMessage).
func decodeError(sentinel, err error) error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return &fileError{msg: pe.KeyMessage(), sentinel: sentinel, cause: err}
	}
	return &fileError{msg: err.Error(), sentinel: sentinel, cause: err}
}
