package fileposix

import "os"

// SetSync makes p call sync instead of fsync on Store's temporary file.
func SetSync(p *Provider, sync func(*os.File) error) { p.sync = sync }
