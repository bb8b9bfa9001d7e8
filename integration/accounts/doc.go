// Package accounts holds the specs of the user and group types end to
// end: ccm-agent ensure and apply on this host, and ccm-orch ensure on a
// fleet of agents, each agent a ccm-agent process in a mount namespace of
// its own with its own throw-away /etc and /home (internal/accountns), so
// every host has its own account files, as real hosts do, and the
// machine's are never touched.
package accounts
