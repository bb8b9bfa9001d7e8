package orchestrator

import "errors"

// ErrInvalid is returned by Discover and Run when the options or the request
// are invalid (a filter that does not compile, a missing body, a negative
// timeout, ...). Nothing was sent.
var ErrInvalid = errors.New("invalid request")

// ErrPublish is returned by Discover and Run when a request could not be
// handed to NATS (for example because the connection is closed).
var ErrPublish = errors.New("could not send the request")

// ErrNotFound is returned by History when history holds no record of the
// request.
var ErrNotFound = errors.New("not found in history")
