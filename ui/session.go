package ui

import (
	"container/list"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"
)

// Login sessions: a login gets a random id, kept server-side only as its
// SHA-256, that the browser sends back in a cookie. A session ends when it
// was not used for the idle time, when its lifetime is over, at logout,
// when the table is full and it is the least recently used, or when the
// dashboard stops.
const (
	// DefaultSessionIdle ends a session not used for this long.
	DefaultSessionIdle = 30 * time.Minute
	// DefaultSessionLifetime ends a session this long after its login.
	DefaultSessionLifetime = 12 * time.Hour
	// DefaultMaxSessions is how many sessions are held at most.
	DefaultMaxSessions = 1000
	// sessionIDBytes is the size of a session id's random part.
	sessionIDBytes = 32
)

// sessions is the table of live login sessions.
type sessions struct {
	now            func() time.Time
	idle, lifetime time.Duration
	max            int

	mu sync.Mutex
	// guards byKey and order
	byKey map[[sha256.Size]byte]*list.Element
	// order holds *session, the least recently used first.
	order *list.List
}

// session is one login's record.
type session struct {
	key     [sha256.Size]byte
	created time.Time
	used    time.Time
}

func newSessions(now func() time.Time, idle, lifetime time.Duration, max int) *sessions {
	return &sessions{now: now, idle: idle, lifetime: lifetime, max: max,
		byKey: map[[sha256.Size]byte]*list.Element{}, order: list.New()}
}

// create starts a session and returns its id, for the cookie.
func (s *sessions) create() string {
	b := make([]byte, sessionIDBytes)
	_, _ = rand.Read(b) // never fails: crypto/rand crashes the program instead
	id := base64.RawURLEncoding.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for e := s.order.Front(); e != nil && !s.liveLocked(e.Value.(*session), now); e = s.order.Front() {
		s.removeLocked(e)
	}
	for s.order.Len() >= s.max {
		s.removeLocked(s.order.Front())
	}
	ss := &session{key: sha256.Sum256([]byte(id)), created: now, used: now}
	s.byKey[ss.key] = s.order.PushBack(ss)
	return id
}

// use says whether id names a live session and, when it does, how long
// it has left unless used again. touch marks it used: a request a person
// made, not a page's own live update.
func (s *sessions) use(id string, touch bool) (ok bool, left time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byKey[sha256.Sum256([]byte(id))]
	if e == nil {
		return false, 0
	}
	now := s.now()
	ss := e.Value.(*session)
	if !s.liveLocked(ss, now) {
		s.removeLocked(e)
		return false, 0
	}
	if touch {
		ss.used = now
		s.order.MoveToBack(e)
	}
	return true, min(ss.used.Add(s.idle).Sub(now), ss.created.Add(s.lifetime).Sub(now))
}

// end ends the session id names, if any.
func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byKey[sha256.Sum256([]byte(id))]; e != nil {
		s.removeLocked(e)
	}
}

func (s *sessions) liveLocked(ss *session, now time.Time) bool {
	return now.Sub(ss.used) < s.idle && now.Sub(ss.created) < s.lifetime
}

func (s *sessions) removeLocked(e *list.Element) {
	delete(s.byKey, e.Value.(*session).key)
	s.order.Remove(e)
}
