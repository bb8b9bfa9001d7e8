package archivetype

import (
	"bytes"
	"strings"
)

// Format is an archive format, named by its canonical extension.
type Format string

const (
	// FormatTarGz is a gzip-compressed tar archive (.tar.gz or .tgz).
	FormatTarGz Format = "tar.gz"
	// FormatTar is an uncompressed tar archive (.tar).
	FormatTar Format = "tar"
	// FormatZip is a ZIP archive (.zip).
	FormatZip Format = "zip"
)

// extensions maps each supported extension to its format; .tgz and .tar.gz
// are the same format.
var extensions = []struct {
	ext    string
	format Format
}{
	{".tar.gz", FormatTarGz},
	{".tgz", FormatTarGz},
	{".tar", FormatTar},
	{".zip", FormatZip},
}

// SupportedExtensions lists the extensions FormatOf recognises.
func SupportedExtensions() []string {
	out := make([]string, 0, len(extensions))
	for _, e := range extensions {
		out = append(out, e.ext)
	}
	return out
}

// FormatOf returns the archive format a file name or URL path ends with,
// comparing the extension case-insensitively. A bare extension with nothing
// before it (".zip") is not a file name and is not recognised.
func FormatOf(name string) (Format, bool) {
	lower := strings.ToLower(name)
	for _, e := range extensions {
		if strings.HasSuffix(lower, e.ext) {
			base := lower[strings.LastIndexByte(lower, '/')+1:]
			if len(base) <= len(e.ext) {
				return "", false
			}
			return e.format, true
		}
	}
	return "", false
}

// HeadBytes is how many of a file's first bytes Looks needs: a tar
// header's magic ends at byte 263.
const HeadBytes = 512

// Looks reports whether head, the first bytes of a file (HeadBytes of
// them when it has that many), begin as an archive of format f: the gzip
// magic number for tar.gz, a zip local file header (or the end record of
// an empty zip) for zip, the ustar magic of a POSIX or GNU tar header for
// tar.
func (f Format) Looks(head []byte) bool {
	switch f {
	case FormatTarGz:
		return bytes.HasPrefix(head, []byte{0x1f, 0x8b, 0x08})
	case FormatZip:
		return bytes.HasPrefix(head, []byte("PK\x03\x04")) || bytes.HasPrefix(head, []byte("PK\x05\x06"))
	case FormatTar:
		return len(head) >= 263 && bytes.Equal(head[257:262], []byte("ustar"))
	}
	return false
}
