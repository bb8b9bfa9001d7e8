package packaging

import "errors"

// ErrConfig is returned by Config.Validate and Build when the Config lacks
// a required setting or asks for an architecture or format not supported.
var ErrConfig = errors.New("packaging config")

// ErrDocs is returned by Build when a command fails to print its manual
// page or a completion script, or prints nothing or too much.
var ErrDocs = errors.New("generating manual pages and completion")
