package templates

import "time"

// SetRenderTime shortens the time limit of renders for a test; restore
// puts it back.
func SetRenderTime(d time.Duration) (restore func()) {
	old := renderTime
	renderTime = d
	return func() { renderTime = old }
}
