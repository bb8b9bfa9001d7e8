package exectype

// BasePath is the PATH an exec resource's command (and its guards) run
// with, and where the executable is looked up, unless the resource sets
// path: the one CCM uses, so a resource finds the same commands on every
// host whatever the agent's own PATH is.
const BasePath = "/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin:/usr/local/sbin"

// BaseDir is the working directory of a command whose resource sets no
// cwd: /, as CCM runs commands, never the directory the agent or the
// caller of ccm-agent ensure happens to be in.
const BaseDir = "/"

// BaseEnvironment returns the fixed environment every exec command starts
// from, besides PATH: the C locale, as CCM sets it. The resource's
// environment is added after it (and may override it); the agent's or the
// caller's own environment is never passed on.
func BaseEnvironment() []string {
	return []string{"LANG=C", "LC_ALL=C"}
}
