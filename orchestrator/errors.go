package orchestrator

import (
	"errors"
	"fmt"
)

// ErrInvalid is returned by Discover and Run when the options or the request
// are invalid (a filter that does not compile, a missing body, a negative
// timeout, ...). Nothing was sent.
var ErrInvalid = errors.New("invalid request")

// ErrPublish is returned by Discover and Run when a request could not be
// handed to NATS (for example because the connection is closed).
var ErrPublish = errors.New("could not send the request")

// ErrNotFound is returned by History when history holds no record of the
// request (wrapped in a *MissingRequestError).
var ErrNotFound = errors.New("not found in history")

// MissingRequestError is returned by History when history holds no record
// of the request itself: it was never made, has expired, or was not kept
// (the store was full or history unavailable when it ran, which the run
// reported as Result.HistoryError). It carries the hosts' records found for
// the request id, which may still exist. It wraps ErrNotFound.
type MissingRequestError struct {
	// RequestID is the request looked up.
	RequestID string `json:"request_id"`
	// Hosts are the replies history holds for the request, sorted by
	// identity; without the request record their deadline and the
	// expected set are unknown, so lateness and no-replies are not told.
	Hosts []HostResult `json:"hosts"`
}

// Error says the request is unknown when history holds nothing for it (no
// request record and no host record: a mistyped id, or one that expired),
// else that its own record is missing and how many host records were found.
func (e *MissingRequestError) Error() string {
	if len(e.Hosts) == 0 {
		return fmt.Sprintf("request %s is unknown: history holds no request record and no host records for it; check the id (ccm-orch history list shows the requests history holds; a request that ran while the store was full or history was unavailable is not among them)",
			e.RequestID)
	}
	return fmt.Sprintf("%v: request %s has no request record: it may not have been kept (store full or history unavailable when it ran); %d host records found",
		ErrNotFound, e.RequestID, len(e.Hosts))
}

// Unwrap returns ErrNotFound.
func (e *MissingRequestError) Unwrap() error { return ErrNotFound }
