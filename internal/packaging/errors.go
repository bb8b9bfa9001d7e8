package packaging

import "errors"

// ErrConfig is returned by Config.Validate and Build when the Config lacks
// a required setting or asks for an architecture or format not supported.
var ErrConfig = errors.New("packaging config")
