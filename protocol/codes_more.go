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
	// CodeQuarantined: the receiver stopped (crashed or was killed) twice
	// in a row while running this assignment revision; it is not run
	// again there until a newer revision is assigned.
	CodeQuarantined Code = "quarantined"
)

// Codes lists every error code, for those who count by code (metrics).
var Codes = []Code{CodeBadRequest, CodeExpired, CodeBusy, CodeForbidden, CodeInternal,
	CodeUnauthenticated, CodeClockSkew, CodeDuplicate, CodeInterrupted, CodeTooLarge, CodeQuarantined}

// NewError builds a request-level error with a stable code and a message.
func NewError(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap builds a request-level error whose message is err's text (as
// NewError(code, "%s", err) does) and which unwraps to err, so errors.Is
// and errors.As still classify its cause on this side of the wire. A nil
// err gives nil.
func Wrap(code Code, err error) *Error {
	if err == nil {
		return nil
	}
	return Wrapf(code, err, "%s", err)
}

// Wrapf is NewError whose error unwraps to cause: the message is the
// formatted text (which may render cause, `manifest bundle: %s`), while
// errors.Is and errors.As still find cause and what it wraps.
func Wrapf(code Code, cause error, format string, args ...any) *Error {
	e := NewError(code, format, args...)
	e.cause = cause
	return e
}

// WrapAt is Wrap for a cause about the value at field (a path, as Field
// is): the answer names field, its message is still err's text.
func WrapAt(code Code, field string, err error) *Error {
	e := Wrap(code, err)
	if e != nil {
		e.Field = field
	}
	return e
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
