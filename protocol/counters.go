package protocol

import "sync/atomic"

// decodes counts the strict JSON decodes this process has made; encodes
// the replies and events it encoded.
var decodes, encodes atomic.Int64

// Decodes returns how many strict JSON decodes (each a pass of the
// decoder over a document, YAML documents after their conversion
// included) this process has made: tests and benchmarks read it around
// one path to pin how often that path decodes.
func Decodes() int64 { return decodes.Load() }

// Encodes returns how many replies (FleetReply.Encode,
// EnsureResponse.Marshal) and events encoded alone
// (TransactionEvent.MarshalJSON) this process has encoded: tests read it
// around one request to pin that its reply is encoded once.
func Encodes() int64 { return encodes.Load() }
