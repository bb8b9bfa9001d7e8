// Package templates evaluates the expressions that resources carry: {{ ... }}
// templates inside string properties and the boolean conditions of
// control.if and control.unless.
//
// Expressions use the expr language over an Env whose roots are facts., data.
// and, only when the caller exposes them, environ. and file(). A request that
// arrives over the network gets an Env with facts and data only, so it can
// read neither the agent's environment nor its files.
package templates
