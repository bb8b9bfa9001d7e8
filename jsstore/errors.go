package jsstore

import "errors"

// ErrNoHistory is returned by the history readers when the history stream
// does not exist (run `ccm-orch history init`) or JetStream is not
// available.
var ErrNoHistory = errors.New("no history stream")

// ErrNoRegistry is returned by ReadRegistry when the node registry bucket
// does not exist or JetStream is not available.
var ErrNoRegistry = errors.New("no node registry")

// ErrInvalid is wrapped by configuration errors.
var ErrInvalid = errors.New("invalid JetStream configuration")
