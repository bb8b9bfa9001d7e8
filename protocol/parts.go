package protocol

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A document larger than one message (a reply of thousands of events, its
// history record) travels as numbered parts: the bytes of the whole cut in
// order, each part a message of its own. Every part names its index, the
// part count, the whole's size and its SHA-256 digest in headers; the first
// part also carries the whole's signature headers (a signature over the
// whole, as for a document sent in one message). A receiver collects the
// parts by digest, in any order, ignores repeats, and checks the size and
// the digest of the joined bytes before it decodes them and verifies the
// signature. A document small enough for one message is sent as it is,
// without these headers.
const (
	// HeaderPart is the index of a part, 1 to its count.
	HeaderPart = "Ccm-Part"
	// HeaderParts is how many parts the whole was cut into.
	HeaderParts = "Ccm-Parts"
	// HeaderWholeSize is the size of the whole in bytes.
	HeaderWholeSize = "Ccm-Whole-Size"
	// HeaderWholeDigest is the lower-case hex SHA-256 of the whole.
	HeaderWholeDigest = "Ccm-Whole-Digest"
)

// Bounds of documents sent in parts.
const (
	// MaxWholeBytes is the largest document sent in parts: a reply or a
	// history record. Agents refuse at admission a request that declares
	// more resources than MaxRequestResources, so that its reply stays
	// below it.
	MaxWholeBytes = 64 << 20
	// MaxParts is the most parts one document may be cut into.
	MaxParts = 4096
	// MinPartBytes is the smallest part a document is cut into: a
	// connection whose messages cannot hold that much beside the headers
	// cannot carry large documents.
	MinPartBytes = 16 << 10
	// MaxRequestResources is the most resources one request may declare;
	// a request with more is refused at admission (CodeTooLarge) before
	// any runs.
	MaxRequestResources = 20000
	// PartHeaderRoom is what a sender leaves free in each message for the
	// protocol headers of a part beside the ones it sets itself.
	PartHeaderRoom = 1024
)

// CodeTooLarge: the request asks for more than the receiver can account
// for (run, reply to and record); it was refused before anything ran.
const CodeTooLarge Code = "too_large"

// Sentinel errors of documents sent in parts.
var (
	// ErrIncomplete is returned when a document sent in parts cannot be
	// joined: a part is missing, its headers disagree with the others, or
	// the joined bytes do not match the size or digest announced.
	ErrIncomplete = errors.New("incomplete document")
	// ErrPartsTooLarge is returned when a document is larger than
	// MaxWholeBytes, or would need more than MaxParts parts.
	ErrPartsTooLarge = errors.New("document too large to send in parts")
)

// PartInfo is what the headers of one part say.
type PartInfo struct {
	// Index is the part's position, 1 to Count.
	Index int
	// Count is how many parts the whole has.
	Count int
	// Size is the whole's size in bytes.
	Size int
	// Digest is the whole's SHA-256, lower-case hex.
	Digest string
}

// Part is one part of a document: its info and bytes.
type Part struct {
	PartInfo
	Data []byte
}

// Headers returns the part's protocol headers, to add to the message's
// (nats.Header is a map[string][]string).
func (p PartInfo) Headers() map[string][]string {
	return map[string][]string{
		HeaderPart:        {strconv.Itoa(p.Index)},
		HeaderParts:       {strconv.Itoa(p.Count)},
		HeaderWholeSize:   {strconv.Itoa(p.Size)},
		HeaderWholeDigest: {p.Digest},
	}
}

// Digest returns the lower-case hex SHA-256 of data, as HeaderWholeDigest
// carries it.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Split cuts data into parts of at most partBytes bytes each, in order,
// each sharing a slice of data. It fails (ErrPartsTooLarge) when data is
// larger than MaxWholeBytes or needs more than MaxParts parts, and when
// partBytes is below MinPartBytes.
func Split(data []byte, partBytes int) ([]Part, error) {
	if partBytes < MinPartBytes {
		return nil, fmt.Errorf("%w: parts of %d bytes are below the minimum of %d (the connection's max payload is too small)", ErrPartsTooLarge, partBytes, MinPartBytes)
	}
	if len(data) > MaxWholeBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrPartsTooLarge, len(data), MaxWholeBytes)
	}
	count := max(1, (len(data)+partBytes-1)/partBytes)
	if count > MaxParts {
		return nil, fmt.Errorf("%w: %d bytes need %d parts of %d bytes, the limit is %d parts", ErrPartsTooLarge, len(data), count, partBytes, MaxParts)
	}
	digest := Digest(data)
	parts := make([]Part, count)
	for i := range count {
		end := min(len(data), (i+1)*partBytes)
		parts[i] = Part{PartInfo: PartInfo{Index: i + 1, Count: count, Size: len(data), Digest: digest}, Data: data[i*partBytes : end]}
	}
	return parts, nil
}

// ParsePartInfo reads a part's headers through get (nats.Header.Get). ok is
// false when the message is not a part (it carries none of the headers);
// headers present but invalid are an error wrapping ErrIncomplete.
func ParsePartInfo(get func(string) string) (info PartInfo, ok bool, err error) {
	index, count, size, digest := get(HeaderPart), get(HeaderParts), get(HeaderWholeSize), get(HeaderWholeDigest)
	if index == "" && count == "" && size == "" && digest == "" {
		return info, false, nil
	}
	num := func(name, v string, lo, hi int) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("%w: header %s %.20q must be a number from %d to %d", ErrIncomplete, name, v, lo, hi)
		}
		return n, nil
	}
	if info.Count, err = num(HeaderParts, count, 1, MaxParts); err != nil {
		return info, true, err
	}
	if info.Index, err = num(HeaderPart, index, 1, info.Count); err != nil {
		return info, true, err
	}
	if info.Size, err = num(HeaderWholeSize, size, 0, MaxWholeBytes); err != nil {
		return info, true, err
	}
	if len(digest) != sha256.Size*2 || strings.ToLower(digest) != digest {
		return info, true, fmt.Errorf("%w: header %s %.80q is not a lower-case hex SHA-256", ErrIncomplete, HeaderWholeDigest, digest)
	}
	if _, herr := hex.DecodeString(digest); herr != nil {
		return info, true, fmt.Errorf("%w: header %s %.80q is not a lower-case hex SHA-256", ErrIncomplete, HeaderWholeDigest, digest)
	}
	info.Digest = digest
	return info, true, nil
}

// Assembly collects the parts of one document. It is not safe for
// concurrent use.
type Assembly struct {
	info  PartInfo
	parts [][]byte
	have  int
	bytes int
}

// NewAssembly starts collecting the document that info (any of its parts)
// describes.
func NewAssembly(info PartInfo) (*Assembly, error) {
	if info.Count < 1 || info.Count > MaxParts || info.Size < 0 || info.Size > MaxWholeBytes {
		return nil, fmt.Errorf("%w: %d parts of a %d-byte document are beyond the limits (%d parts, %d bytes)", ErrPartsTooLarge, info.Count, info.Size, MaxParts, MaxWholeBytes)
	}
	return &Assembly{info: PartInfo{Count: info.Count, Size: info.Size, Digest: info.Digest}, parts: make([][]byte, info.Count)}, nil
}

// Add takes one part. A part seen before is ignored (duplicate true). A
// part whose headers disagree with the document's, or whose bytes would
// pass the announced size, is an error wrapping ErrIncomplete and is not
// kept.
func (a *Assembly) Add(info PartInfo, data []byte) (duplicate bool, err error) {
	switch {
	case info.Count != a.info.Count || info.Size != a.info.Size || info.Digest != a.info.Digest:
		return false, fmt.Errorf("%w: part %d says %d parts of %d bytes with digest %.12s, the document %d parts of %d bytes with digest %.12s",
			ErrIncomplete, info.Index, info.Count, info.Size, info.Digest, a.info.Count, a.info.Size, a.info.Digest)
	case info.Index < 1 || info.Index > a.info.Count:
		return false, fmt.Errorf("%w: part %d of %d", ErrIncomplete, info.Index, a.info.Count)
	case a.parts[info.Index-1] != nil:
		return true, nil
	case a.bytes+len(data) > a.info.Size:
		return false, fmt.Errorf("%w: part %d (%d bytes) passes the document's %d bytes", ErrIncomplete, info.Index, len(data), a.info.Size)
	}
	if data == nil {
		data = []byte{}
	}
	a.parts[info.Index-1] = data
	a.have++
	a.bytes += len(data)
	return false, nil
}

// Complete reports whether every part arrived.
func (a *Assembly) Complete() bool { return a.have == a.info.Count }

// Bytes is how many bytes the parts received hold.
func (a *Assembly) Bytes() int { return a.bytes }

// Missing lists the indexes of the parts not received, in order.
func (a *Assembly) Missing() []int {
	var out []int
	for i, p := range a.parts {
		if p == nil {
			out = append(out, i+1)
		}
	}
	return out
}

// Whole joins the parts and checks the size and digest announced; an
// incomplete document or one that does not match is an error wrapping
// ErrIncomplete.
func (a *Assembly) Whole() ([]byte, error) {
	if !a.Complete() {
		return nil, fmt.Errorf("%w: %d of %d parts received, missing %s", ErrIncomplete, a.have, a.info.Count, listInts(a.Missing(), 10))
	}
	whole := bytes.Join(a.parts, nil)
	if whole == nil {
		whole = []byte{}
	}
	if len(whole) != a.info.Size {
		return nil, fmt.Errorf("%w: the parts hold %d bytes, the document %d", ErrIncomplete, len(whole), a.info.Size)
	}
	if d := Digest(whole); d != a.info.Digest {
		return nil, fmt.Errorf("%w: the joined parts' digest %.12s is not the document's %.12s", ErrIncomplete, d, a.info.Digest)
	}
	return whole, nil
}

// listInts writes up to limit numbers, then how many more.
func listInts(ns []int, limit int) string {
	parts := make([]string, 0, min(len(ns), limit)+1)
	for i, n := range ns {
		if i == limit {
			parts = append(parts, fmt.Sprintf("and %d more", len(ns)-limit))
			break
		}
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, ", ")
}

// HeaderBytes estimates how many bytes the NATS protocol spends on the
// headers h (a nats.Header): the version line, each "key: value" line and
// the blank line that ends them.
func HeaderBytes(h map[string][]string) int {
	n := len("NATS/1.0\r\n") + 2
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	return n
}

// PartBytes is the largest part that fits in a message of maxPayload bytes
// beside headers h and the part headers (with PartHeaderRoom to spare).
func PartBytes(maxPayload int64, h map[string][]string) int {
	return int(maxPayload) - HeaderBytes(h) - PartHeaderRoom
}

// FitsOneMessage reports whether data with headers h fits in one message
// of maxPayload bytes with PartHeaderRoom to spare: a document that does is
// sent whole, without part headers.
func FitsOneMessage(maxPayload int64, h map[string][]string, data []byte) bool {
	return len(data)+HeaderBytes(h)+PartHeaderRoom <= int(maxPayload)
}

// historyPartMark separates a request id from a part number in the first
// token of a history part's subject; request ids never hold it.
const historyPartMark = "~p"

// HistoryPartSubject is where part n (2 and up) of a history record kept
// in parts is stored: ccm.v1.history.<request_id>~p<n>.<identity>, or
// ...~p<n>._request for the request's own record (identity ""). Part 1 is
// the record at its usual subject, carrying the part headers. The identity
// stays the last token, so a host allowed to publish
// ccm.v1.history.*.<identity> may store its parts.
func HistoryPartSubject(requestID, identity string, n int) string {
	last := HistoryRequestToken
	if identity != "" {
		last = EncodeToken(identity)
	}
	return HistorySubjectPrefix + "." + EncodeToken(requestID) + historyPartMark + strconv.Itoa(n) + "." + last
}

// HistoryPartMsgID is the JetStream message id of part n of a record.
func HistoryPartMsgID(requestID, identity string, n int) string {
	return HistoryMsgID(requestID, identity) + "/p" + strconv.Itoa(n)
}

// IsHistoryPartSubject reports whether subject is where a part (2 and up)
// of a history record is stored: readers of the stream skip these and
// fetch them when they read the record's first part.
func IsHistoryPartSubject(subject string) bool {
	rest, ok := strings.CutPrefix(subject, HistorySubjectPrefix+".")
	if !ok {
		return false
	}
	first, _, _ := strings.Cut(rest, ".")
	return strings.Contains(first, historyPartMark)
}
