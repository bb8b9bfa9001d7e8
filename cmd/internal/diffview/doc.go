// Package diffview prints the diff of a transaction event (protocol.Diff)
// for people: attribute changes as "mode 0600 → 0644", the unified content
// diff, per-file diffs and the files added or purged, with added and
// removed lines coloured on a terminal. Both CLIs use it.
package diffview
