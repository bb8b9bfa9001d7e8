package pkgtype

import (
	"context"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// Provider is what a package manager implements to back the package type.
//
// Every method that runs a command takes ctx first and stops when it is
// done. pkg is a package name that passed ValidateName; version is
// EnsurePresent (any version, the package manager's choice), EnsureLatest
// (the newest available) or a specific version that passed ValidateVersion.
// Implementations validate both again before running anything, and return
// errors wrapping ErrCommandFailed when a command exits unsuccessfully.
type Provider interface {
	resources.Provider

	// Install installs pkg at version.
	Install(ctx context.Context, pkg, version string) error
	// Upgrade brings an installed pkg up to version.
	Upgrade(ctx context.Context, pkg, version string) error
	// Downgrade brings an installed pkg down to version.
	Downgrade(ctx context.Context, pkg, version string) error
	// Uninstall removes pkg.
	Uninstall(ctx context.Context, pkg string) error
	// Status reports pkg as found: its state's Ensure is the installed
	// version, or EnsureAbsent when it is not installed. An error means
	// the state could not be determined.
	Status(ctx context.Context, pkg string) (*protocol.PackageState, error)
	// VersionCmp compares two versions in the package manager's own
	// ordering and returns -1, 0 or 1 as a is older than, the same as or
	// newer than b. ignoreTrailingZeroes makes 1.0.0 equal 1.0 where the
	// ordering supports it. An error means a version cannot be parsed.
	VersionCmp(a, b string, ignoreTrailingZeroes bool) (int, error)
}

// Resolver is what a package provider implements, optionally, to say
// whether Install(ctx, pkg, version) could start without running it: nil
// when the package manager has a package of exactly that name to install
// at version, else an error naming the problem (wrapping ErrNoSuchPackage
// when no package has that name). Under noop the type asks it before
// predicting an install, upgrade or downgrade, so a noop of a package that
// does not exist fails saying so, as the real run would.
type Resolver interface {
	Resolve(ctx context.Context, pkg, version string) error
}
