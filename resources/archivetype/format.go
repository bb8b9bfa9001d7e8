package archivetype

import "strings"

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
