// Package schemacheck runs the published JSON schemas (schemas/) through a
// stock validator, Python's jsonschema command line, the way an operator
// would offline, for the specs that check real output against them. It
// finds the interpreters that have the validator, runs it with every HTTP(S)
// fetch pointed at a closed port, and spoils a document so a spec can see
// the validator refuse it.
package schemacheck
