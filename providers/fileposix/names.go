package fileposix

import (
	"os/user"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Files whose change invalidates the cached names.
const (
	passwdFile = "/etc/passwd"
	groupFile  = "/etc/group"
)

// nameTTL bounds how long a cached name is used even when the account files
// did not change (names may come from elsewhere through NSS).
const nameTTL = 10 * time.Second

// idNames caches the user and group names of numeric ids for Status, which
// reports them on every check, and the ids of the names the writes set
// (ownerGroup): looking one up reads and parses the whole account file. Every
// lookup first looks at the account file it reads (one stat: device, inode,
// size, mtime and ctime) and empties that file's cache when any of them
// changed, so an account added, removed or renumbered through the files is
// seen by the very next lookup; an entry older than nameTTL is looked up
// again, for other NSS sources. A name that names no account is never
// cached, and each cache holds at most maxCachedNames entries. A factory's
// providers share one cache; it is safe for concurrent use.
type idNames struct {
	// passwdFile and groupFile are the account files whose change empties the
	// caches (/etc/passwd and /etc/group).
	passwdFile, groupFile string
	// mu guards users and groups
	mu     sync.Mutex
	users  nameCache
	groups nameCache
}

// nameCache is the cache of one kind of id: names by id, ids by name, valid
// for the version of the account file that file identifies.
type nameCache struct {
	file    fileStamp
	entries map[uint32]nameEntry
	ids     map[string]idEntry
}

type nameEntry struct {
	name    string
	fetched time.Time
}

type idEntry struct {
	id      int
	fetched time.Time
}

// refreshLocked empties the cache when stamp, the account file as just
// looked at, is not the version its entries came from (or the file could
// not be looked at); n.mu is held.
func (c *nameCache) refreshLocked(stamp fileStamp) {
	if stamp != c.file || !stamp.ok {
		c.file = stamp
		clear(c.entries)
		clear(c.ids)
	}
}

// fileStamp identifies a version of a file: a file replaced (rename over
// it), rewritten or touched changes at least one of these, and ctime
// cannot be set back by the writer.
type fileStamp struct {
	dev, ino           uint64
	size, mtime, ctime int64
	ok                 bool
}

func stampOf(path string) fileStamp {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileStamp{}
	}
	return fileStamp{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ok: true}
}

func newIDNames() *idNames {
	return &idNames{
		passwdFile: passwdFile,
		groupFile:  groupFile,
		users:      nameCache{entries: map[uint32]nameEntry{}, ids: map[string]idEntry{}},
		groups:     nameCache{entries: map[uint32]nameEntry{}, ids: map[string]idEntry{}},
	}
}

// user returns uid's user name, or its number when it has none.
func (n *idNames) user(uid uint32) string {
	return n.lookup(&n.users, n.passwdFile, uid, func(id string) (string, error) {
		u, err := user.LookupId(id)
		if err != nil {
			return "", err
		}
		return u.Username, nil
	})
}

// group returns gid's group name, or its number when it has none.
func (n *idNames) group(gid uint32) string {
	return n.lookup(&n.groups, n.groupFile, gid, func(id string) (string, error) {
		g, err := user.LookupGroupId(id)
		if err != nil {
			return "", err
		}
		return g.Name, nil
	})
}

// maxCachedNames bounds each cache; it is emptied when full.
const maxCachedNames = 4096

func (n *idNames) lookup(c *nameCache, file string, id uint32, resolve func(string) (string, error)) string {
	now := time.Now()
	stamp := stampOf(file)
	n.mu.Lock()
	c.refreshLocked(stamp)
	e, ok := c.entries[id]
	n.mu.Unlock()
	if ok && now.Sub(e.fetched) < nameTTL {
		return e.name
	}
	s := strconv.FormatUint(uint64(id), 10)
	name, err := resolve(s)
	if err != nil {
		name = s
	}
	n.mu.Lock()
	if len(c.entries) >= maxCachedNames {
		clear(c.entries)
	}
	if c.file == stamp && stamp.ok {
		c.entries[id] = nameEntry{name: name, fetched: now}
	}
	n.mu.Unlock()
	return name
}

// ownerGroup returns the ids of the owner and group a write sets: names
// looked up in the account database (cached, see idNames), else numbers.
func (n *idNames) ownerGroup(owner, group string) (uid, gid int, err error) {
	uid, err = n.lookupName(&n.users, n.passwdFile, owner, func(s string) (string, error) {
		u, err := user.Lookup(s)
		if err != nil {
			return "", err
		}
		return u.Uid, nil
	})
	if err != nil {
		return 0, 0, &AccountError{Property: "owner", Name: owner, Err: err}
	}
	gid, err = n.lookupName(&n.groups, n.groupFile, group, func(s string) (string, error) {
		g, err := user.LookupGroup(s)
		if err != nil {
			return "", err
		}
		return g.Gid, nil
	})
	if err != nil {
		return 0, 0, &AccountError{Property: "group", Name: group, Err: err}
	}
	return uid, gid, nil
}

// lookupName is the id of name, from the cache while it holds (see
// idNames), else looked up with byName (or read as a number) and cached.
func (n *idNames) lookupName(c *nameCache, file, name string, byName func(string) (string, error)) (int, error) {
	now := time.Now()
	stamp := stampOf(file)
	n.mu.Lock()
	c.refreshLocked(stamp)
	e, ok := c.ids[name]
	n.mu.Unlock()
	if ok && now.Sub(e.fetched) < nameTTL {
		return e.id, nil
	}
	id, err := lookupID(name, byName)
	if err != nil {
		return 0, err
	}
	n.mu.Lock()
	if len(c.ids) >= maxCachedNames {
		clear(c.ids)
	}
	if c.file == stamp && stamp.ok {
		c.ids[name] = idEntry{id: id, fetched: now}
	}
	n.mu.Unlock()
	return id, nil
}
