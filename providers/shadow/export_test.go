package shadow

// SetLookPath replaces the lookup IsManageable uses, for tests.
func (f *factory) SetLookPath(l func(string) (string, error)) { f.lookPath = l }
