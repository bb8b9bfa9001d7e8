// Package provision is what ccm-orch history init and ccm-broker share:
// creating the history stream, the node registry and the assignment store
// (Streams), and reading the ages and sizes of their flags.
package provision
