// Package jsonline appends JSON strings and times to a byte slice exactly
// as encoding/json writes them (the same escapes, byte for byte), without
// reflection: the agent's per-request lines (the replay cache's journal)
// are built with it, and read back with encoding/json.
package jsonline
