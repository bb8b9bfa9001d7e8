package execposix

// SetShell points the factory at another shell, so tests can make the shell
// provider unavailable.
func (f *ShellFactory) SetShell(path string) { f.shell = path }
