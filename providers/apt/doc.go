// Package apt is the apt provider of the package type, for Debian and its
// derivatives. It reads package state with dpkg-query, asks apt-cache policy
// for the candidate version when ensure is latest, installs, upgrades and
// downgrades with apt-get install and removes with apt-get remove, all
// non-interactively and one command at a time under a lock shared by every
// package provider of the process. Versions compare by the Debian policy
// algorithm (version.go).
//
// It does not run apt-get update: keeping the package index fresh is left to
// the user (an exec resource): a resource run must not change the package
// index behind the operator's back, nor depend on the network to start.
package apt
