package protocol

import (
	"errors"
	"fmt"
	"strings"
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
// request matches with errors.Is: such failures are *Error values with
// CodeBadRequest, whose Is method reports the match.
var ErrBadRequest = errors.New("bad request")

// ErrTooLarge is returned, wrapped in a bad request, when an input exceeds
// the size limit given to a decoder.
var ErrTooLarge = errors.New("input too large")

// Error is a request-level failure with a stable code. Field, when set, is
// the path of the offending key as the author wrote it (`ttl`,
// `ensure.properties.Provider`, `signers[0].colour`); Message is a sentence
// for people that names it. On the wire it is {code, message} plus field
// when known.
type Error struct {
	Code    Code   `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`

	// reason is the problem without its location; "" for an error built
	// without a field (Message is then the reason).
	reason string
	// keyed marks a problem with the key at Field itself (unknown, twice):
	// the location shown is its parent, the reason names the key.
	keyed bool
	// unknownKey marks a key the schema does not have.
	unknownKey bool
	// parent is the path above an unknown key, key the key as written.
	parent, key string
	// cause is a sentinel such as ErrTooLarge, or the error Wrap was
	// given, for errors.Is and errors.As.
	cause error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Error makes a code usable as the target of errors.Is:
// errors.Is(err, protocol.CodeBusy) reports whether err is, or wraps, an
// *Error with that code. Its text is the code.
func (c Code) Error() string { return string(c) }

// Is classifies e by its code, as nats.go's jetstream APIError does:
// target matches when it is e's Code, another *Error with the same Code
// (and, when the target names a Field, the same Field), or ErrBadRequest
// for CodeBadRequest.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case Code:
		return e.Code == t
	case *Error:
		return t != nil && e.Code == t.Code && (t.Field == "" || t.Field == e.Field)
	}
	return target == ErrBadRequest && e.Code == CodeBadRequest
}

// Unwrap returns the sentinel (ErrTooLarge) or the cause (Wrap) the error
// was built with, or nil.
func (e *Error) Unwrap() error { return e.cause }

// Reason returns what is wrong without where: `expected a string, got
// number`, `unknown key "colour"`.
func (e *Error) Reason() string {
	if e.reason == "" {
		return e.Message
	}
	return e.reason
}

// UnknownKey reports whether the problem is that Field names a key the
// schema does not have (or has only in another spelling).
func (e *Error) UnknownKey() bool { return e.unknownKey }

// Key returns the unknown key as written (see UnknownKey), "" otherwise.
func (e *Error) Key() string { return e.key }

// KeyMessage renders the error for a configuration file: `signers[0]:
// unknown key "colour"`, `max_clock_skew: expected ...`, or the bare
// reason when no field is known.
func (e *Error) KeyMessage() string {
	loc := e.location()
	if loc == "" {
		return e.Reason()
	}
	return loc + ": " + e.Reason()
}

// location is where the problem is shown: the field, or for an unknown key
// its parent.
func (e *Error) location() string {
	if e.keyed {
		return e.parent
	}
	return e.Field
}

// Within returns a copy of e located under prefix: Field `colour` within
// `signers[0]` becomes `signers[0].colour`, and the message says so. A
// non-bad-request error, or an empty prefix, is returned unchanged.
func (e *Error) Within(prefix string) *Error {
	if prefix == "" || e.Code != CodeBadRequest {
		return e
	}
	out := *e
	out.reason = e.Reason()
	out.Field = joinPath(prefix, e.Field)
	switch {
	case out.unknownKey:
		out.parent = joinPath(prefix, e.parent)
		out.Message = unknownKeyMessage(out.parent, out.key)
	case out.keyed:
		out.parent = joinPath(prefix, e.parent)
		out.Message = renderMessage(out.parent, out.reason)
	default:
		out.Message = renderMessage(out.Field, out.reason)
	}
	return &out
}

// badRequest builds a bad request without a field.
func badRequest(format string, args ...any) *Error {
	return &Error{Code: CodeBadRequest, Message: fmt.Sprintf(format, args...)}
}

// fieldError builds a bad request about the value at field.
func fieldError(field, format string, args ...any) *Error {
	reason := fmt.Sprintf(format, args...)
	if field == "" {
		return &Error{Code: CodeBadRequest, Message: reason}
	}
	return &Error{Code: CodeBadRequest, Field: field, reason: reason, Message: renderMessage(field, reason)}
}

// unknownKeyError builds a bad request about key, a key of the object at
// parent that the schema does not have.
// UnknownKeyError is the bad request for key, as written, in the object
// at parent (a dotted path, "" for the top), which has no such key.
func UnknownKeyError(parent, key string) *Error { return unknownKeyError(parent, key) }

func unknownKeyError(parent, key string) *Error {
	return &Error{Code: CodeBadRequest, Field: joinPath(parent, key), parent: parent, key: key,
		reason: fmt.Sprintf("unknown key %q", key), keyed: true, unknownKey: true, Message: unknownKeyMessage(parent, key)}
}

// keyError builds a bad request about key itself, a key of the object at
// parent (given twice, say).
func keyError(parent, key, reason string) *Error {
	return &Error{Code: CodeBadRequest, Field: joinPath(parent, key), parent: parent, key: key,
		reason: reason, keyed: true, Message: renderMessage(parent, reason)}
}

// unknownKeyMessage is the wire message of an unknown key: `unknown field
// "extra"` at the top, `field "ensure.properties": unknown field
// "Provider"` below it.
func unknownKeyMessage(parent, key string) string {
	if parent == "" {
		return fmt.Sprintf("unknown field %q", key)
	}
	return fmt.Sprintf("field %q: unknown field %q", parent, key)
}

// within returns err located under prefix when it is an *Error, or a bad
// request about prefix carrying err's text otherwise.
func within(prefix string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e.Within(prefix)
	}
	return fieldError(prefix, "%s", err)
}

// renderMessage is the wire message of a bad request about the value at
// field: `field "ttl": must be positive`.
func renderMessage(field, reason string) string {
	if field == "" {
		return reason
	}
	return fmt.Sprintf("field %q: %s", field, reason)
}

// joinPath appends child (a path, possibly starting with an index) to prefix.
func joinPath(prefix, child string) string {
	switch {
	case child == "":
		return prefix
	case prefix == "":
		return child
	case strings.HasPrefix(child, "["):
		return prefix + child
	default:
		return prefix + "." + child
	}
}

// wrapped builds a bad request whose message is format's text and which
// unwraps to cause (a decoder's own error), so its type stays reachable
// with errors.As.
func wrapped(cause error, field, format string, args ...any) *Error {
	e := fieldError(field, format, args...)
	e.cause = cause
	return e
}

// messageOf returns the message of an *Error in err's chain (without its
// code), or err's text.
func messageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}
