// Command packager builds the ccm-fleet .deb and .rpm packages into
// dist/out (make package runs it from the module root):
//
//	go run ./dist/packager --version 1.2.3 --commit abc1234 --date 2026-01-02T03:04:05Z
//
// It is a program of its own so that nFPM is never linked into ccm-agent
// or ccm-orch.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ccm-fleet/ccm/internal/packaging"
)

func main() {
	var c packaging.Config
	var arches, formats string
	flag.StringVar(&c.Root, "root", ".", "the module's checkout")
	flag.StringVar(&c.Out, "out", "dist/out", "where the packages are written")
	flag.StringVar(&c.Version, "version", "development", "version stamped into the binaries and giving the package's")
	flag.StringVar(&c.Commit, "commit", "", "commit stamped into the binaries")
	flag.StringVar(&c.Date, "date", "", "build date stamped into the binaries (RFC 3339: also the files' mtime)")
	flag.StringVar(&arches, "arch", strings.Join(packaging.SupportedArches, ","), "architectures, comma separated")
	flag.StringVar(&formats, "format", strings.Join(packaging.SupportedFormats, ","), "package formats, comma separated")
	flag.Parse()
	c.Arches = strings.Split(arches, ",")
	c.Formats = strings.Split(formats, ",")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	built, err := packaging.Build(ctx, c, log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "packager: %v\n", err)
		os.Exit(1)
	}
	for _, p := range built {
		fmt.Println(p)
	}
}
