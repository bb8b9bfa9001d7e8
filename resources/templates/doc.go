// Package templates evaluates the expressions that resources carry:
// templates inside string properties, written {{ expr }} or ${ expr } (CCM
// accepts both), and the boolean conditions of control.if and
// control.unless.
//
// Expressions use the expr language over an Env. Its variables are facts and
// data, also spelt Facts and Data as in CCM (below the gathered fact trees
// Facts also answers to gopsutil's Go field names: Facts.host.info.Hostname),
// and, only when the caller exposes them, environ/Environ. Its functions are
// lookup(key, default) over dotted paths (a "#" segment gives a list's
// length), file()/readFile(), template() and jet() (both may read files, so
// they need WithFiles for .templ and .jet names), and kvGet(bucket, key)
// when WithKV gives a store (package natskv reads NATS JetStream buckets).
// A request that arrives over the network gets an Env with facts and data
// only, so it can read neither the agent's environment nor its files.
//
// A template whose expression gives nothing (a key that does not exist,
// read as Facts.x.y) is an error wrapping ErrMissingKey, never an empty
// string; only an Env built WithMissingEmpty (hierarchy order entries)
// treats a missing key as "".
package templates
