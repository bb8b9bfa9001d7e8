package shadow

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// passwdEntry is one line of getent passwd.
type passwdEntry struct {
	name, gecos, home, shell string
	uid, gid                 int64
}

// parsePasswd reads name:x:uid:gid:gecos:home:shell.
func parsePasswd(line string) (passwdEntry, error) {
	f := strings.Split(strings.TrimRight(line, "\n"), ":")
	if len(f) != 7 {
		return passwdEntry{}, fmt.Errorf("%w: passwd entry with %d fields", ErrParse, len(f))
	}
	uid, err1 := strconv.ParseInt(f[2], 10, 64)
	gid, err2 := strconv.ParseInt(f[3], 10, 64)
	if err1 != nil || err2 != nil {
		return passwdEntry{}, fmt.Errorf("%w: passwd entry of %s: uid or gid is not a number", ErrParse, f[0])
	}
	return passwdEntry{name: f[0], uid: uid, gid: gid, gecos: f[4], home: f[5], shell: f[6]}, nil
}

// groupEntry is one line of getent group.
type groupEntry struct {
	name    string
	gid     int64
	members []string
}

// parseGroups reads name:x:gid:member,member lines.
func parseGroups(out string) ([]groupEntry, error) {
	var groups []groupEntry
	for line := range strings.SplitSeq(strings.TrimRight(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) != 4 {
			return nil, fmt.Errorf("%w: group entry with %d fields", ErrParse, len(f))
		}
		gid, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: group entry of %s: gid is not a number", ErrParse, f[0])
		}
		g := groupEntry{name: f[0], gid: gid, members: []string{}}
		if f[3] != "" {
			g.members = strings.Split(f[3], ",")
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// shadowEntry is what this package reads of getent shadow: the hash (a
// lock's '!' taken off), whether it is locked, and the expiry.
type shadowEntry struct {
	hash   string
	locked bool
	expiry string
}

// parseShadow reads name:hash:last:min:max:warn:inactive:expire:reserved.
// A hash of "!" or "*" alone is no password; a leading '!' is a lock.
func parseShadow(line string) (shadowEntry, error) {
	f := strings.Split(strings.TrimRight(line, "\n"), ":")
	if len(f) != 9 {
		return shadowEntry{}, fmt.Errorf("%w: shadow entry with %d fields", ErrParse, len(f))
	}
	e := shadowEntry{expiry: "never"}
	hash := f[1]
	if strings.HasPrefix(hash, "!") {
		e.locked = true
		hash = strings.TrimPrefix(hash, "!")
	}
	if strings.HasPrefix(hash, "$") {
		e.hash = hash
	}
	if f[7] != "" {
		days, err := strconv.ParseInt(f[7], 10, 64)
		if err != nil {
			return shadowEntry{}, fmt.Errorf("%w: shadow entry of %s: expire is not a number", ErrParse, f[0])
		}
		e.expiry = time.Unix(days*86400, 0).UTC().Format(time.DateOnly)
	}
	return e, nil
}
