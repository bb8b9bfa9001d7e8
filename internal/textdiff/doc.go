// Package textdiff computes line-based unified diffs (the format of
// "diff -u"), used to show how a managed file's content drifted from what a
// resource wants. The edit script comes from Myers' O(ND) algorithm over
// the lines left once the common prefix and suffix are set aside; past a
// bound on the number of edits the middle is shown as removed then added,
// which is still a correct diff, so hostile input costs bounded time and
// memory.
package textdiff
