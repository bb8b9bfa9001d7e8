package fileposix

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"

	"github.com/ccm-fleet/ccm/providers/internal/safefs"
)

// openParent opens the directory holding name through safefs (each
// component from "/" with O_NOFOLLOW; links followed only when root or this
// process's user owns them, see the package safefs) and returns the handle
// and name's last component. Every change and every status read is then
// made relative to that handle, so a directory swapped for a link after the
// check cannot redirect it. A parent that is missing or not a directory
// gives an error naming it; an untrusted link one wrapping
// filetype.ErrSymlink.
func (p *Provider) openParent(name string) (*safefs.Dir, string, error) {
	d, base, err := p.parentOf(name)
	if err == nil {
		return d, base, nil
	}
	dir := filepath.Dir(filepath.Clean(name))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", fmt.Errorf("parent directory %s does not exist: %w", dir, err)
	case errors.Is(err, syscall.ENOTDIR):
		return nil, "", fmt.Errorf("parent directory %s is not a directory: %w", dir, err)
	}
	return nil, "", err
}

// parentOf opens the directory holding name with safefs.OpenParent and
// returns it with name's last component; every parent directory the
// provider opens for a file is opened here, and tests count the walks
// (p.opened).
func (p *Provider) parentOf(name string) (*safefs.Dir, string, error) {
	if p.opened != nil {
		p.opened(name)
	}
	return safefs.OpenParent(name)
}
