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
// did not change (names may come from elsewhere through NSS), and
// stampEvery how often the account files are looked at for a change.
const (
	nameTTL    = 10 * time.Second
	stampEvery = time.Second
)

// idNames caches the user and group names of numeric ids for Status, which
// reports them on every check, and the ids of the names the writes set
// (ownerGroup): looking one up reads and parses the whole account file. An
// entry is used while it is younger than nameTTL and the account file it
// came from has not changed (size, mtime, inode; looked at once a second at
// most), so an account added, removed or renumbered is seen within a
// second through the files and within nameTTL through other NSS sources. A
// name that names no account is never cached. A factory's providers share
// one cache; it is safe for concurrent use.
type idNames struct {
	mu     sync.Mutex
	users  nameCache
	groups nameCache
}

// nameCache is the cache of one kind of id: names by id, ids by name.
type nameCache struct {
	file    fileStamp
	stamped time.Time
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

// refresh empties the cache when file changed since it was last looked
// at (at most once every stampEvery), and returns the file's stamp; n.mu
// is held.
func (c *nameCache) refresh(file string, now time.Time) fileStamp {
	if now.Sub(c.stamped) >= stampEvery || now.Before(c.stamped) {
		if stamp := stampOf(file); stamp != c.file || !stamp.ok {
			c.file = stamp
			clear(c.entries)
			clear(c.ids)
		}
		c.stamped = now
	}
	return c.file
}

// fileStamp identifies a version of a file.
type fileStamp struct {
	size, mtime int64
	ino         uint64
	ok          bool
}

func stampOf(path string) fileStamp {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileStamp{}
	}
	return fileStamp{size: st.Size, mtime: st.Mtim.Nano(), ino: st.Ino, ok: true}
}

func newIDNames() *idNames {
	return &idNames{
		users:  nameCache{entries: map[uint32]nameEntry{}, ids: map[string]idEntry{}},
		groups: nameCache{entries: map[uint32]nameEntry{}, ids: map[string]idEntry{}},
	}
}

// user returns uid's user name, or its number when it has none.
func (n *idNames) user(uid uint32) string {
	return n.lookup(&n.users, passwdFile, uid, func(id string) (string, error) {
		u, err := user.LookupId(id)
		if err != nil {
			return "", err
		}
		return u.Username, nil
	})
}

// group returns gid's group name, or its number when it has none.
func (n *idNames) group(gid uint32) string {
	return n.lookup(&n.groups, groupFile, gid, func(id string) (string, error) {
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
	n.mu.Lock()
	stamp := c.refresh(file, now)
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
	uid, err = n.lookupName(&n.users, passwdFile, owner, func(s string) (string, error) {
		u, err := user.Lookup(s)
		if err != nil {
			return "", err
		}
		return u.Uid, nil
	})
	if err != nil {
		return 0, 0, &AccountError{Property: "owner", Name: owner, Err: err}
	}
	gid, err = n.lookupName(&n.groups, groupFile, group, func(s string) (string, error) {
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
	n.mu.Lock()
	stamp := c.refresh(file, now)
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
