package orchestrator

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/natsconn"
	"github.com/ccm-fleet/ccm/protocol"
)

// Bounds of the replies that arrive in parts (see protocol.Split): what
// the parts being joined may hold in all, how many replies may be joined
// at once, and how long one may wait for its missing parts. A reply
// beyond a bound, or whose parts do not all come or do not match, is not
// taken live: the host is reported in Result.Incomplete and its history
// record, which the agent keeps whole (in parts), is read instead.
const (
	maxJoiningBytes   = 256 << 20
	maxJoiningReplies = 256
	partsTimeout      = 30 * time.Second
	// partsStall is how long after its last part a reply still being
	// joined counts as stalled: the run's history records are then read
	// (the agent keeps its reply there whole) while the parts may still
	// come.
	partsStall = 2 * time.Second
	// maxIncomplete bounds the incomplete replies remembered per run.
	maxIncomplete = 1000
)

// joining is one reply whose parts are arriving.
type joining struct {
	asm *protocol.Assembly
	// head is part 1's header (the signature), nil until it came
	head nats.Header
	// identity is the identity part 1 claims (unverified), "" until it came
	identity string
	// started and last are when its first and latest part came
	started, last time.Time
}

// incompleteReply is a reply that arrived only in part, or whose parts
// did not match.
type incompleteReply struct {
	identity string
	reason   string
}

// assembler joins the replies that arrive in parts on one inbox. It is
// safe for concurrent use: the subscription adds parts, the runner expires
// what waited too long and takes the incomplete ones.
type assembler struct {
	now func() time.Time
	// maxBytes and maxReplies bound what is joined at once
	maxBytes, maxReplies int

	// guards the fields below
	mu         sync.Mutex
	byDigest   map[string]*joining
	bytes      int
	incomplete []incompleteReply
	// dropped counts incomplete replies past maxIncomplete
	dropped int
}

func newAssembler(now func() time.Time) *assembler {
	return &assembler{now: now, maxBytes: maxJoiningBytes, maxReplies: maxJoiningReplies, byDigest: map[string]*joining{}}
}

// add takes one message of the inbox. part is false for a message that is
// not a part (it is passed on as it is). For a part, whole is the joined
// reply (a message with part 1's header and the whole as data) once its
// last part came, nil before.
func (s *assembler) add(m *nats.Msg) (whole *nats.Msg, part bool) {
	info, ok, err := protocol.ParsePartInfo(m.Header.Get)
	if !ok {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expireLocked(now)
	if err != nil {
		s.failLocked("", "a reply part with invalid headers: "+err.Error())
		return nil, true
	}
	j := s.byDigest[info.Digest]
	if j == nil {
		switch {
		case len(s.byDigest) >= s.maxReplies:
			s.failLocked(claimedIdentity(info, m.Data), "more than "+strconv.Itoa(s.maxReplies)+" replies were being joined at once")
			return nil, true
		case s.bytes+len(m.Data) > s.maxBytes:
			s.failLocked(claimedIdentity(info, m.Data), "the replies being joined passed "+strconv.Itoa(s.maxBytes)+" bytes")
			return nil, true
		}
		asm, err := protocol.NewAssembly(info)
		if err != nil {
			s.failLocked(claimedIdentity(info, m.Data), err.Error())
			return nil, true
		}
		j = &joining{asm: asm, started: now, last: now}
		s.byDigest[info.Digest] = j
	}
	if s.bytes+len(m.Data) > s.maxBytes {
		s.dropLocked(info.Digest, j, "the replies being joined passed "+strconv.Itoa(s.maxBytes)+" bytes")
		return nil, true
	}
	before := j.asm.Bytes()
	dup, err := j.asm.Add(info, m.Data)
	if err != nil || dup {
		// A repeated part is ignored; one that does not fit the reply is
		// not kept (the reply then stays incomplete, or is joined from
		// the genuine part if it comes).
		return nil, true
	}
	s.bytes += j.asm.Bytes() - before
	j.last = now
	if info.Index == 1 {
		j.head = m.Header
		j.identity = claimedIdentity(info, m.Data)
	}
	if !j.asm.Complete() {
		return nil, true
	}
	data, err := j.asm.Whole()
	if err != nil || j.head == nil {
		reason := "part 1 carries no signature"
		if err != nil {
			reason = err.Error()
		}
		s.dropLocked(info.Digest, j, reason)
		return nil, true
	}
	s.removeLocked(info.Digest, j)
	return natsconn.NewMsg(m.Subject, "", j.head, data), true
}

// expire gives up on the replies that waited partsTimeout for their
// missing parts; it reports whether there was one.
func (s *assembler) expire(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.expireLocked(now)
}

func (s *assembler) expireLocked(now time.Time) bool {
	expired := false
	for d, j := range s.byDigest {
		if now.Sub(j.started) >= partsTimeout {
			s.dropLocked(d, j, "parts missing after "+partsTimeout.String())
			expired = true
		}
	}
	return expired
}

// close gives up on every reply still being joined (the run is over).
func (s *assembler) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for d, j := range s.byDigest {
		s.dropLocked(d, j, "the run ended before every part arrived")
	}
}

// takeIncomplete returns the incomplete replies noted since the last call.
func (s *assembler) takeIncomplete() []incompleteReply {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.incomplete
	s.incomplete = nil
	return out
}

func (s *assembler) dropLocked(digest string, j *joining, reason string) {
	missing := j.asm.Missing()
	if len(missing) > 0 {
		reason += " (missing part " + strconv.Itoa(missing[0])
		if len(missing) > 1 {
			reason += " and " + strconv.Itoa(len(missing)-1) + " more"
		}
		reason += ")"
	}
	s.removeLocked(digest, j)
	s.failLocked(j.identity, reason)
}

func (s *assembler) removeLocked(digest string, j *joining) {
	s.bytes -= j.asm.Bytes()
	delete(s.byDigest, digest)
}

func (s *assembler) failLocked(identity, reason string) {
	if len(s.incomplete) >= maxIncomplete {
		s.dropped++
		return
	}
	s.incomplete = append(s.incomplete, incompleteReply{identity: identity, reason: reason})
}

// claimedIdentity is the identity part 1 of a reply names (a reply
// document starts with its protocol, request id and identity); "" for
// another part or when it cannot be read. It is a claim, used to report
// the host whose reply did not come whole, never to take a result.
func claimedIdentity(info protocol.PartInfo, data []byte) string {
	if info.Index != 1 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(data[:min(len(data), 4096)]))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for range 8 {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return ""
		}
		if key == "identity" {
			var id string
			if json.Unmarshal(v, &id) != nil || protocol.ValidateIdentity(id) != nil {
				return ""
			}
			return id
		}
	}
	return ""
}

// incompleteHosts lists, sorted, the identities of the incomplete replies
// among hosts that gave no result.
func incompleteHosts(found []incompleteReply, noResult func(string) bool) []string {
	var out []string
	for _, f := range found {
		if f.identity != "" && noResult(f.identity) && !slices.Contains(out, f.identity) {
			out = append(out, f.identity)
		}
	}
	slices.Sort(out)
	return out
}

// stalled reports whether a reply being joined has had no new part for
// partsStall.
func (s *assembler) stalled(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.byDigest {
		if now.Sub(j.last) >= partsStall {
			return true
		}
	}
	return false
}

// joiningCount is how many replies are being joined.
func (s *assembler) joiningCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byDigest)
}

// activate starts reading the run's history records, as after a
// reconnect: a reply that did not arrive whole is taken from there.
func (rc *reconciler) activate(now time.Time) {
	rc.active = true
	if !rc.polling && (rc.next.IsZero() || rc.next.After(now)) {
		rc.next = now
	}
}

// noteIncomplete takes the replies the inbox could not join since the
// last call: each is logged, and the run's history records are read from
// now on, so that their hosts' records, kept whole, are taken instead.
func (r *runner) noteIncomplete(now time.Time) {
	if r.in.parts.stalled(now) && !r.rc.active {
		r.c.log.Info("a reply arriving in parts stalled, reading the run's history as well", "request", r.id)
		r.rc.activate(now)
	}
	found := r.in.parts.takeIncomplete()
	if len(found) == 0 {
		return
	}
	for _, f := range found {
		r.c.log.Warn("a reply did not arrive whole, reading it from history", "request", r.id, "identity", f.identity, "reason", f.reason)
	}
	r.incomplete = append(r.incomplete, found...)
	if len(r.incomplete) > maxIncomplete {
		r.incomplete = r.incomplete[len(r.incomplete)-maxIncomplete:]
	}
	r.rc.activate(now)
}

// incompleteNoResult lists the hosts whose reply or history record did
// not arrive whole and that have no result.
func (r *runner) incompleteNoResult() []string {
	return incompleteHosts(r.incomplete, func(id string) bool {
		h := r.hosts[id]
		return h != nil && h.asked && h.result == nil
	})
}
