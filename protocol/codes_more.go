package protocol

import (
	"errors"
	"fmt"
)

// Error codes of the fleet layer, next to those in errors.go.
const (
	// CodeUnauthenticated: the request carries no acceptable sender or
	// signature.
	CodeUnauthenticated Code = "unauthenticated"
	// CodeClockSkew: the request's created time is too far from the
	// receiver's clock for its TTL to be trusted.
	CodeClockSkew Code = "clock_skew"
	// CodeDuplicate: a request with this id was already received; it is not
	// run twice.
	CodeDuplicate Code = "duplicate"
	// CodeInterrupted: the receiver stopped (crashed or was killed) while
	// the request was queued or running; it may have run in part.
	CodeInterrupted Code = "interrupted"
)

// Codes lists every error code, for those who count by code (metrics).
var Codes = []Code{CodeBadRequest, CodeExpired, CodeBusy, CodeForbidden, CodeInternal,
	CodeUnauthenticated, CodeClockSkew, CodeDuplicate, CodeInterrupted, CodeTooLarge}

// NewError builds a request-level error with a stable code and a message.
func NewError(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsError turns err into a request-level error: an *Error in its chain is
// returned as is, an ErrBadRequest becomes CodeBadRequest, anything else
// CodeInternal. A nil err gives nil.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, ErrBadRequest):
		return &Error{Code: CodeBadRequest, Message: err.Error()}
	default:
		return &Error{Code: CodeInternal, Message: err.Error()}
	}
}

// Plain returns err as people read it: its text is AsError(err).Message
// (an *Error's message without its code), while errors.Is and errors.As
// still find err and everything it wraps. A nil err gives nil.
func Plain(err error) error {
	if err == nil {
		return nil
	}
	return &plainError{msg: AsError(err).Message, err: err}
}

// plainError is err with the text Plain gives it.
type plainError struct {
	msg string
	err error
}

func (e *plainError) Error() string { return e.msg }

func (e *plainError) Unwrap() error { return e.err }
