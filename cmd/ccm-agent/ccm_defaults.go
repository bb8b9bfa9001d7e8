package main

import (
	"fmt"
	"os"
	"os/user"
	"strconv"

	"github.com/ccm-fleet/ccm/cmd/internal/resflags"
	"github.com/ccm-fleet/ccm/resources/catalog"
)

// CCM's command line fills in what "ensure file" and "ensure archive" leave
// out: the owner and group of the user running it, and for a file mode
// 0644 (0755 for a directory). The resource catalog says which type takes
// which (catalog.LocalDefaults). Manifests and requests still have to say
// them.
const (
	defaultFileMode      = "0644"
	defaultDirectoryMode = "0755"
)

// localDefaults fills in what CCM's command line does for the type when a
// local "ensure" did not give it.
func localDefaults(typeName string, props map[string]any) error {
	t, _ := resflags.Lookup(typeName)
	return fillDefaults(typeName, t.Defaults, props)
}

// fillDefaults sets what d says props lack.
func fillDefaults(typeName string, d catalog.LocalDefaults, props map[string]any) error {
	if d.NotWhenAbsent && props["ensure"] == "absent" {
		return nil
	}
	if _, ok := props["mode"]; d.Modes && !ok {
		props["mode"] = defaultFileMode
		if props["ensure"] == "directory" {
			props["mode"] = defaultDirectoryMode
		}
	}
	if d.Owner {
		return ownerDefaults(typeName, props)
	}
	return nil
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
