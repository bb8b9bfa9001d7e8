package archivetype

import "errors"

var (
	// ErrUnsupportedFormat is returned when a path or URL does not end in one
	// of the supported archive extensions (.tar.gz, .tgz, .tar, .zip).
	ErrUnsupportedFormat = errors.New("archive type not supported")
	// ErrWrongProvider is returned by Apply when the provider it is handed
	// does not implement the archive Provider interface.
	ErrWrongProvider = errors.New("provider does not implement the archive provider interface")
)
