package protocol

import (
	"errors"
	"fmt"
)

// Code is a stable, machine readable reason a request was not processed.
// Scripts may rely on these values; the message next to them is for people.
type Code string

// Error codes.
const (
	// CodeBadRequest: the request could not be decoded or failed validation.
	CodeBadRequest Code = "bad_request"
	// CodeExpired: the request's lifetime ended before it could run.
	CodeExpired Code = "expired"
	// CodeBusy: the receiver's queue is full; the request was not run.
	CodeBusy Code = "busy"
	// CodeForbidden: policy does not allow what the request asks for.
	CodeForbidden Code = "forbidden"
	// CodeInternal: the receiver failed for a reason that is not the caller's.
	CodeInternal Code = "internal"
)

// ErrBadRequest is the sentinel every decoding and validation failure of a
// request wraps, so callers can classify it with errors.Is.
var ErrBadRequest = errors.New("bad request")

// ErrTooLarge is returned, wrapped in ErrBadRequest, when an input exceeds the
// size limit given to a decoder.
var ErrTooLarge = errors.New("input too large")

// Error is a request-level failure with a stable code.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// badRequest builds an error that wraps ErrBadRequest with a message naming the problem.
func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}
