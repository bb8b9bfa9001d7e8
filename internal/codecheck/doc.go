// Package codecheck reads the repository's Go source with go/ast and
// reports the shapes the project has ruled out of non-test code: NATS
// messages built as composite literals instead of with nats.NewMsg, error
// text edited or compared instead of the error classified with
// errors.Is/errors.As, errors flattened to their text, and per-type
// knowledge outside the resource catalog, the one place that knows the
// types: switches on a resource type's name, a type compared with a
// string naming one, and literals listing resource types (the package
// that declares the type name constants may list them). In test files
// too, it reports comments that cite a seed document by number: a reader
// cannot find it, so the comment states the rule instead. It also checks
// the files git tracks: no built binary, nothing over 2 MiB outside a
// testdata directory (make lint runs that check).
package codecheck
