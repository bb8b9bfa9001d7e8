package execposix

import "errors"

// ErrNoRunner is returned when a provider was built without a command runner.
var ErrNoRunner = errors.New("no command runner configured")
