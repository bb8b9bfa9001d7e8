package pkgtype

import "errors"

var (
	// ErrCommandFailed is wrapped by provider errors when a package manager
	// command ran but exited with a status that means failure.
	ErrCommandFailed = errors.New("package command failed")
	// ErrUnexpectedOutput is wrapped by provider errors when the output of
	// a package query cannot be understood.
	ErrUnexpectedOutput = errors.New("unexpected package command output")
	// ErrNoSuchPackage is wrapped by provider errors when no package has
	// exactly the name asked for: a name is never handed to a package
	// manager that could read it as a pattern, a regular expression, a
	// glob or another package's name and version.
	ErrNoSuchPackage = errors.New("no such package")
	// ErrNotPackageProvider is returned by Type.Apply when the provider it
	// is given does not implement Provider.
	ErrNotPackageProvider = errors.New("provider does not implement the package provider interface")
)
