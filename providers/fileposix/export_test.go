package fileposix

import "os"

// SetSync makes p call sync instead of fsync on Store's temporary file.
func SetSync(p *Provider, sync func(*os.File) error) { p.sync = sync }

// SetOpened makes p call opened with the path of every parent directory
// walk it makes.
func SetOpened(p *Provider, opened func(name string)) { p.opened = opened }
