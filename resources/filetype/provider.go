package filetype

import (
	"context"
	"os"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// Provider is what a file provider implements. Every method honours ctx
// cancellation, never follows a symbolic link at the path it manages, and
// returns an error naming what failed; owner and group are names or numeric
// ids, mode an octal string as accepted by ParseMode.
type Provider interface {
	resources.Provider

	// Status reports what is at name as found without following a symbolic
	// link there: Ensure is present (regular file), directory, absent,
	// symlink or special, and Metadata carries owner, group, mode ("0644"),
	// size, mtime and, for regular files only, the SHA-256 checksum.
	Status(ctx context.Context, name string) (*protocol.FileState, error)
	// Store atomically writes name with contents, or with the bytes of the
	// local file source when source is set, and the given attributes. The
	// parent directory must exist.
	Store(ctx context.Context, name string, contents []byte, source string, owner, group, mode string) error
	// CreateDirectory creates dir (and missing parents) or fixes the
	// attributes of an existing directory.
	CreateDirectory(ctx context.Context, dir, owner, group, mode string) error
	// SetAttributes changes the owner, group and mode of an existing file or
	// directory without touching its content.
	SetAttributes(ctx context.Context, name, owner, group, mode string) error
	// Remove removes name; a non-empty directory only when force is set
	// (ErrNotEmpty otherwise). A missing name is not an error.
	Remove(ctx context.Context, name string, force bool) error
}

// SourceOpener is implemented by providers that open a local source file
// themselves, the way their Store reads it (through directory handles),
// so that the type hashes and shows the very file Store will copy.
// OpenSource returns the open regular file, or an error naming it; it
// honours ctx.
type SourceOpener interface {
	OpenSource(ctx context.Context, source string) (*os.File, error)
}

// Binder is implemented by providers that can hold, for one apply of one
// path, what every call on that path would otherwise find again: the posix
// provider opens the parent directory once and looks at, writes and looks
// again at the file relative to that one handle. Bind returns the context
// to make the apply's calls with, which carries what it holds, and a
// function that releases it, to be called once the apply is done (the
// context must not be used after that). It never fails: when it cannot
// hold anything the calls do what they do without it (and report the same
// errors). What is held travels in the context, not in another provider
// value, so a provider wrapping a Binder by embedding it keeps its own
// methods.
type Binder interface {
	Bind(ctx context.Context, name string) (context.Context, func())
}
