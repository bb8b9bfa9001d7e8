package gossrun

import (
	"bytes"
	"io"
	"log"
)

// gossLevels are the level tags goss puts at the start of the lines it
// writes to the standard logger. At DEBUG it writes every command's output
// there, which would leave the host by the agent's own stderr, past
// redaction; the goss CLI drops them below ERROR, and here none is kept:
// what a check found is in its result.
var gossLevels = [][]byte{[]byte("[TRACE]"), []byte("[DEBUG]"), []byte("[INFO]"), []byte("[WARN]"), []byte("[ERROR]")}

// maxHeader bounds the standard logger's header before a level tag.
const maxHeader = 48

// levelFilter passes to next every line of the standard logger except
// goss's tagged ones.
type levelFilter struct{ next io.Writer }

func (f levelFilter) Write(b []byte) (int, error) {
	// The logger's header (date, time) comes first, within maxHeader.
	head := b[:min(len(b), maxHeader)]
	for _, l := range gossLevels {
		if i := bytes.Index(head, l); i >= 0 && bytes.IndexByte(head[:i], '[') < 0 {
			return len(b), nil
		}
	}
	return f.next.Write(b)
}

// filterGossLogs makes the standard logger drop goss's lines, once per
// output it is given.
func filterGossLogs() {
	if _, ok := log.Writer().(levelFilter); !ok {
		log.SetOutput(levelFilter{next: log.Writer()})
	}
}
