package main

import (
	"io"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/diffview"
	"github.com/ccm-fleet/ccm/protocol"
)

// diffFlags are --diff, --no-color and --diff-max-bytes of ensure and apply.
type diffFlags struct {
	show     bool
	noColor  bool
	maxBytes int64
}

func (d *diffFlags) register(cmd *fisk.CmdClause) {
	cmd.Flag("diff", "Print what differs under each resource that changed or would change (content diffs, attribute and version changes); --json always carries the diffs").UnNegatableBoolVar(&d.show)
	cmd.Flag("no-color", "Do not colour added and removed lines of diffs (also when NO_COLOR is set, or output is not a terminal)").UnNegatableBoolVar(&d.noColor)
	cmd.Flag("diff-max-bytes", "Content larger than this on either side gets a summary line (sizes, checksums) instead of a line diff (default 65536)").PlaceHolder("BYTES").Int64Var(&d.maxBytes)
}

// write prints the event's diff indented under its line, with --diff.
func (d *diffFlags) write(w io.Writer, ev *protocol.TransactionEvent) {
	if !d.show || ev == nil {
		return
	}
	diffview.Write(w, ev.Diff, "    ", diffview.Colour(w, d.noColor))
}
