package protocol

import "sync/atomic"

// decodes counts the strict JSON decodes this process has made.
var decodes atomic.Int64

// Decodes returns how many strict JSON decodes (each a pass of the
// decoder over a document, YAML documents after their conversion
// included) this process has made: tests and benchmarks read it around
// one path to pin how often that path decodes.
func Decodes() int64 { return decodes.Load() }
