// Package conformance holds the conformance table: inputs (resource command
// lines, manifests, hiera documents) run through real CCM once and recorded
// with their provenance (testdata/ccm.json, written by ./record), then run
// through ccm-agent by the package's spec in every `make test` and compared
// with what CCM did, case by case, as the case's verdict says: the same, a
// documented difference (a row of docs/coming-from-ccm.md), or a place
// where CCM contradicts its own documentation and ccm-agent follows it.
//
// Run and observe a case with Run; what is compared is an Observation per
// command: the exit code, each resource's outcome and noop message as the
// binary printed them, the files the case watches (mode, owner, content) and,
// for commands that print a document, the document.
package conformance
