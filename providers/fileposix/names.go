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
// reports them on every check: looking one up reads and parses the whole
// account file. An entry is used while it is younger than nameTTL and the
// account file it came from has not changed (size, mtime, inode; looked at
// once a second at most). A
// factory's providers share one cache; it is safe for concurrent use.
type idNames struct {
	mu     sync.Mutex
	users  nameCache
	groups nameCache
}

// nameCache is the cache of one kind of id.
type nameCache struct {
	file    fileStamp
	stamped time.Time
	entries map[uint32]nameEntry
}

type nameEntry struct {
	name    string
	fetched time.Time
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
	return &idNames{users: nameCache{entries: map[uint32]nameEntry{}}, groups: nameCache{entries: map[uint32]nameEntry{}}}
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
	if now.Sub(c.stamped) >= stampEvery || now.Before(c.stamped) {
		if stamp := stampOf(file); stamp != c.file || !stamp.ok {
			c.file = stamp
			clear(c.entries)
		}
		c.stamped = now
	}
	stamp := c.file
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
