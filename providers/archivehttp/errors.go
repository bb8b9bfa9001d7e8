package archivehttp

import "errors"

var (
	// ErrHTTPStatus is returned when the server answers a download with a
	// status other than 200; the error names the status.
	ErrHTTPStatus = errors.New("unexpected HTTP status")
	// ErrChecksumMismatch is returned when a downloaded archive does not
	// have the expected SHA-256; the error gives expected and actual sums.
	ErrChecksumMismatch = errors.New("checksum mismatch")
	// ErrDownloadTooLarge is returned when a download exceeds the provider's
	// maximum download size.
	ErrDownloadTooLarge = errors.New("download exceeds the size limit")
	// ErrNotArchive is returned, the download removed, when what was
	// downloaded does not begin as an archive of the format its name
	// declares (an HTML page, an error document, another file).
	ErrNotArchive = errors.New("the download is not an archive of its declared format")
	// ErrUnsafeEntry is returned, before anything is extracted, when an
	// archive holds an entry that would land outside extract_parent or is a
	// device, fifo or other special file.
	ErrUnsafeEntry = errors.New("unsafe archive entry")
	// ErrExtractLimit is returned when an archive has more entries or more
	// content than the provider's extraction limits allow.
	ErrExtractLimit = errors.New("archive exceeds the extraction limits")
	// ErrArchiveChanged is returned when the archive read differently while
	// extracting than while it was checked.
	ErrArchiveChanged = errors.New("archive changed during extraction")
	// ErrNoExtractParent is returned by Extract when extract_parent is not set.
	ErrNoExtractParent = errors.New("extract_parent is not set")
	// ErrNotRegular is returned when the archive path exists but is not a
	// regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrUnknownAccount is returned when owner or group names no user or
	// group on this host.
	ErrUnknownAccount = errors.New("unknown user or group")
)
