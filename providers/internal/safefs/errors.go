package safefs

import (
	"fmt"

	"github.com/ccm-fleet/ccm/resources/filetype"
)

// LinkError is returned when a walk or an operation meets a symbolic link it
// must not follow. It unwraps to filetype.ErrSymlink.
type LinkError struct {
	// Path is the path the caller asked for.
	Path string
	// Link is the path of the link that refused, as far as the walk got.
	Link string
	// UID is the link's owner; -1 when the link was refused for being a
	// link at all (the final name, or any link below a Sub walk).
	UID int
}

func (e *LinkError) Error() string {
	if e.UID >= 0 {
		return fmt.Sprintf("%s: the way to it passes through %s, owned by uid %d (not root): %v",
			e.Path, e.Link, e.UID, filetype.ErrSymlink)
	}
	if e.Link == e.Path {
		return fmt.Sprintf("%s %v", e.Path, filetype.ErrSymlink)
	}
	return fmt.Sprintf("%s: %s %v", e.Path, e.Link, filetype.ErrSymlink)
}

// Unwrap returns filetype.ErrSymlink.
func (e *LinkError) Unwrap() error { return filetype.ErrSymlink }
