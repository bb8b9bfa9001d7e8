// Package pkgfactory is what the package providers' factories share: their
// dependencies with defaults, and selection by the os fact.
package pkgfactory

import (
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
)

// Base holds a package provider factory's dependencies and selection rule.
// Embed it; it is read-only once made and safe for concurrent use.
type Base struct {
	Runner runner.Runner
	Log    *slog.Logger
	// Lock serialises every package manager command of the process.
	Lock     *sync.Mutex
	name     string
	priority int
	families []string
}

// New returns the base of the provider name, manageable with priority on
// hosts whose os fact is one of families. A nil runner means runner.Exec,
// a nil log discards, and a nil lock gives the factory a lock of its own.
func New(name string, priority int, families []string, r runner.Runner, log *slog.Logger, lock *sync.Mutex) Base {
	if r == nil {
		r = runner.Exec{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if lock == nil {
		lock = &sync.Mutex{}
	}
	return Base{Runner: r, Log: log, Lock: lock, name: name, priority: priority, families: families}
}

// Type returns "package".
func (b *Base) Type() string { return protocol.TypePackage }

// Name returns the provider's name.
func (b *Base) Name() string { return b.name }

// IsManageable reports true, with the base's priority, on hosts whose os
// fact is one of its families (case-insensitively), or whenever the
// resource names this provider with provider:.
func (b *Base) IsManageable(facts map[string]any, props resources.Properties) (bool, int, error) {
	if props != nil {
		if c := props.Common(); c != nil && c.Provider == b.name {
			return true, b.priority, nil
		}
	}
	os, _ := facts["os"].(string)
	if slices.ContainsFunc(b.families, func(f string) bool { return strings.EqualFold(os, f) }) {
		return true, b.priority, nil
	}
	return false, 0, nil
}
