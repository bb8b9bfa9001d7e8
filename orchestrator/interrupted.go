package orchestrator

import "errors"

// ErrInterrupted is returned by Run, with the Result collected so far,
// when the caller's context ended while replies were awaited. The request
// was sent: the hosts in Result.Running go on and record their results in
// history (Client.History reads them). The error also wraps the context's.
var ErrInterrupted = errors.New("interrupted while waiting for replies")
