// Package archivehttp is the http provider of the archive resource type
// (resources/archivetype): it downloads archives over HTTP or HTTPS and
// extracts them in-process with archive/tar, archive/zip and compress/gzip.
//
// Downloads go to a temporary file beside the target, created with
// O_CREAT|O_EXCL|O_NOFOLLOW in a handle on the target's directory
// (providers/internal/safefs) and renamed within that handle, owned by the
// resource's owner and group from the start, bounded in size, verified
// against the SHA-256 checksum when one is given, and only then renamed into
// place. Basic authentication and extra headers are supported; credentials
// never appear in logs or errors.
//
// Extraction treats archives as hostile: every entry is checked before
// anything is written, and the whole archive is refused when one entry would
// land outside extract_parent (".." components, absolute names, symlinks
// whose target resolves outside or is absolute, hardlinks to anything but an
// earlier file of the archive), is a device, fifo or other special file, or
// when the archive exceeds the entry-count or total-size limits. Writes then
// go through a handle on extract_parent (opened from "/" like every path
// here: a link only root or the agent's user owns is followed) and through
// subdirectories opened from it with O_NOFOLLOW, the archive's own symlinks
// having been resolved by the check: a symlink already on disk, or a
// directory swapped for one mid-extraction, is refused, never followed. File modes come from the archive
// masked with 0777 (setuid, setgid and sticky bits are dropped); extracted
// files belong to the user running the agent, whatever the archive says.
package archivehttp
