// Package codecheck reads the repository's Go source with go/ast and
// reports the shapes the project has ruled out of non-test code: NATS
// messages built as composite literals instead of with nats.NewMsg, error
// text edited or compared instead of the error classified with
// errors.Is/errors.As, errors flattened to their text, and switches on a
// resource type's name outside the resource catalog, the one place that
// knows the types. In test files too, it reports comments that cite a
// seed document by number: a reader cannot find it, so the comment states
// the rule instead.
package codecheck
