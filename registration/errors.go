package registration

import "errors"

// ErrInvalid is wrapped when an entry does not validate.
var ErrInvalid = errors.New("invalid registration entry")

// ErrStream is wrapped when the registration stream cannot be created,
// read or written.
var ErrStream = errors.New("registration stream")
