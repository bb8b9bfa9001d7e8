// Package archivehttp is the http provider of the archive resource type
// (resources/archivetype): it downloads archives over HTTP or HTTPS and
// extracts them in-process with archive/tar, archive/zip and compress/gzip.
//
// Downloads go to a temporary file beside the target, owned by the
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
// go through an os.Root opened on extract_parent, so even a symlink already
// on disk cannot redirect them outside. File modes come from the archive
// masked with 0777 (setuid, setgid and sticky bits are dropped); extracted
// files belong to the user running the agent, whatever the archive says.
package archivehttp
