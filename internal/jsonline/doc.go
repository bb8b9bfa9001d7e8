// Package jsonline appends JSON strings and times to a byte slice exactly
// as encoding/json writes them (the same escapes, byte for byte), without
// reflection: the lines written for every request (the agent's replay
// journal, the audit log) are built with it, and read back with
// encoding/json.
package jsonline
