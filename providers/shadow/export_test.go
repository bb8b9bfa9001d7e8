package shadow

// SetLookPath replaces the lookup IsManageable uses, for tests.
func (f *UserFactory) SetLookPath(l func(string) (string, error)) { f.lookPath = l }

// SetLookPath replaces the lookup IsManageable uses, for tests.
func (f *GroupFactory) SetLookPath(l func(string) (string, error)) { f.lookPath = l }
