// Package hostile makes the hostile inputs the tests of every loader feed
// it (alias bombs and the like), so each test attacks with the same
// document, and the random strings a hand-written validator is compared
// with the expression it replaced on (Strings, Compare). Only tests
// import it.
package hostile
