// Package hostile makes the hostile inputs the tests of every loader feed
// it (alias bombs and the like), so each test attacks with the same
// document. Only tests import it.
package hostile
