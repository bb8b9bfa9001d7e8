package applytype

import "errors"

var (
	// ErrManifestOnly is the failure of an apply resource run outside a
	// manifest (an ensure request or the command line): only a manifest
	// run knows the parent's directory, data and session.
	ErrManifestOnly = errors.New("the apply resource runs only inside a manifest")
	// ErrNestedApply is returned by a child run when the child manifest holds
	// apply resources and the resource that runs it sets allow_apply false.
	ErrNestedApply = errors.New("nested apply resources are not allowed here")
	// ErrTooDeep is returned when apply resources nest deeper than MaxDepth.
	ErrTooDeep = errors.New("apply resources nest too deeply")
)
