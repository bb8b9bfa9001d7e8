package main

import (
	"fmt"
	"github.com/ccm-fleet/ccm/protocol"
	"os"
	"os/user"
	"strconv"
)

// CCM's command line fills in what "ensure file" and "ensure archive" leave
// out: the owner and group of the user running it, and for a file mode
// 0644 (0755 for a directory). Manifests and requests still have to say
// them.
const (
	defaultFileMode      = "0644"
	defaultDirectoryMode = "0755"
)

// fileDefaults sets the owner, group and mode a local "ensure file" did not
// give, as CCM's command line does. An absent file needs none of them.
func fileDefaults(props map[string]any) error {
	if props["ensure"] == "absent" {
		return nil
	}
	if _, ok := props["mode"]; !ok {
		props["mode"] = defaultFileMode
		if props["ensure"] == "directory" {
			props["mode"] = defaultDirectoryMode
		}
	}
	return ownerDefaults("file", props)
}

// localDefaults fills in what CCM's command line does for a type when a
// local "ensure" did not give it: modes and the caller's user and group
// for a file, the caller's user and group for an archive.
func localDefaults(typeName string, props map[string]any) error {
	if typeName == protocol.TypeFile {
		return fileDefaults(props)
	}
	if typeName == protocol.TypeArchive {
		return archiveDefaults(props)
	}
	return nil
}

// archiveDefaults sets the owner and group a local "ensure archive" did not
// give to the user and group running it, as CCM's command line does (for
// every ensure: the archive type needs them even to remove).
func archiveDefaults(props map[string]any) error {
	return ownerDefaults("archive", props)
}

// ownerDefaults sets owner and group, where props lack them, to the names
// of the current user and group.
func ownerDefaults(typeName string, props map[string]any) error {
	if _, ok := props["owner"]; !ok {
		u, err := user.LookupId(strconv.Itoa(os.Getuid()))
		if err != nil {
			return fmt.Errorf("%s %v: no --owner given and the current user has no name: %w", typeName, props["name"], err)
		}
		props["owner"] = u.Username
	}
	if _, ok := props["group"]; !ok {
		g, err := user.LookupGroupId(strconv.Itoa(os.Getgid()))
		if err != nil {
			return fmt.Errorf("%s %v: no --group given and the current group has no name: %w", typeName, props["name"], err)
		}
		props["group"] = g.Name
	}
	return nil
}
