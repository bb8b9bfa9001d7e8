package packaging

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/rpm"
)

// Name is the package's name, for dpkg and rpm alike.
const Name = "ccm-fleet"

// Commands are the binaries the package installs in /usr/bin, each built
// from ./cmd/<name>: the agent, the operators' client and the embedded
// broker (the ccm-broker unit runs it; ccm-orch broker runs it too). The
// benchmark, ccm-bench, is not packaged.
var Commands = []string{"ccm-agent", "ccm-orch", "ccm-broker"}

// Config says what Build builds. Root, Out, Version, Arches and Formats are
// required.
type Config struct {
	// Root is the module's checkout: the commands are built from it and
	// the packaged files are read from its dist/ directory.
	Root string
	// Out is where the packages are written (created if missing); the
	// binaries are built in a temporary directory below it.
	Out string
	// Version, Commit and Date are stamped into the binaries (main.version,
	// main.commit, main.date). Version also gives the package version: see
	// PackageVersion. Date, when RFC 3339, is the packaged files' mtime.
	Version, Commit, Date string
	// Arches are Go architectures: amd64, arm64.
	Arches []string
	// Formats are nFPM packagers: deb, rpm.
	Formats []string
	// Go is the go command (default "go").
	Go string
}

// Validate reports the first missing or unsupported setting.
func (c *Config) Validate() error {
	switch {
	case c.Root == "":
		return fmt.Errorf("%w: no module root", ErrConfig)
	case c.Out == "":
		return fmt.Errorf("%w: no output directory", ErrConfig)
	case c.Version == "":
		return fmt.Errorf("%w: no version", ErrConfig)
	case len(c.Arches) == 0:
		return fmt.Errorf("%w: no architecture", ErrConfig)
	case len(c.Formats) == 0:
		return fmt.Errorf("%w: no package format", ErrConfig)
	}
	for _, a := range c.Arches {
		if !slices.Contains(SupportedArches, a) {
			return fmt.Errorf("%w: architecture %q (supported: %s)", ErrConfig, a, strings.Join(SupportedArches, ", "))
		}
	}
	for _, f := range c.Formats {
		if !slices.Contains(SupportedFormats, f) {
			return fmt.Errorf("%w: format %q (supported: %s)", ErrConfig, f, strings.Join(SupportedFormats, ", "))
		}
	}
	return nil
}

// SupportedArches and SupportedFormats are what Config may ask for.
var (
	SupportedArches  = []string{"amd64", "arm64"}
	SupportedFormats = []string{"deb", "rpm"}
)

// packagers is the table of the nFPM packagers Build uses, by format.
var packagers = map[string]nfpm.Packager{
	"deb": deb.Default,
	"rpm": rpm.DefaultRPM,
}

// Build compiles the commands for every architecture, generates the
// manual pages and completion scripts by running them (see generateDocs),
// and writes one package per architecture and format into c.Out. It returns the
// packages' paths, in the order built. A nil log logs nothing.
func Build(ctx context.Context, c Config, log *slog.Logger) ([]string, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if c.Go == "" {
		c.Go = "go"
	}
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	work, err := os.MkdirTemp(c.Out, ".build-*")
	if err != nil {
		return nil, fmt.Errorf("build directory: %w", err)
	}
	defer os.RemoveAll(work)

	var built []string
	native := ""
	for _, arch := range c.Arches {
		binDir := filepath.Join(work, arch)
		for _, cmd := range Commands {
			log.Info("building", "command", cmd, "arch", arch, "version", c.Version)
			if err := buildCommand(ctx, c, arch, cmd, filepath.Join(binDir, cmd)); err != nil {
				return built, err
			}
		}
		if arch == runtime.GOARCH {
			native = binDir
		}
	}
	// The manual pages and completion scripts come from the commands
	// themselves, run here: built for this machine when no package is.
	if native == "" {
		native = filepath.Join(work, "native")
		for _, cmd := range Commands {
			if err := buildCommand(ctx, c, runtime.GOARCH, cmd, filepath.Join(native, cmd)); err != nil {
				return built, err
			}
		}
	}
	docDir := filepath.Join(work, "docs")
	if err := generateDocs(ctx, native, docDir); err != nil {
		return built, err
	}
	for _, arch := range c.Arches {
		for _, format := range c.Formats {
			path, err := writePackage(c, arch, format, filepath.Join(work, arch), docDir)
			if err != nil {
				return built, err
			}
			log.Info("packaged", "file", path)
			built = append(built, path)
		}
	}
	return built, nil
}

// LDFlags are the linker flags that strip the binaries and stamp the
// build into them, as the Makefile's LDFLAGS do.
func LDFlags(version, commit, date string) string {
	return fmt.Sprintf("-s -w -X main.version=%s -X main.commit=%s -X main.date=%s", version, commit, date)
}

// buildCommand cross-compiles ./cmd/<cmd> for linux/<arch> into out.
func buildCommand(ctx context.Context, c Config, arch, cmd, out string) error {
	build := exec.CommandContext(ctx, c.Go, "build", "-trimpath",
		"-ldflags", LDFlags(c.Version, c.Commit, c.Date), "-o", out, "./cmd/"+cmd)
	build.Dir = c.Root
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	var stderr bytes.Buffer
	build.Stderr = &stderr
	if err := build.Run(); err != nil {
		msg := stderr.Bytes()
		if len(msg) > 4096 {
			msg = msg[len(msg)-4096:]
		}
		return fmt.Errorf("go build %s for %s: %w: %s", cmd, arch, err, bytes.TrimSpace(msg))
	}
	return nil
}

// writePackage packs the binaries in binDir and the generated docs in
// docDir into c.Out in format.
func writePackage(c Config, arch, format, binDir, docDir string) (path string, err error) {
	info := nfpm.WithDefaults(Info(c, arch, format, binDir, docDir))
	if format == "deb" {
		// The changelog names the version dpkg will show, known only
		// once nFPM has split it (WithDefaults).
		if err := withDebChangelog(c, info, filepath.Dir(binDir)); err != nil {
			return "", fmt.Errorf("%s package: %w", format, err)
		}
	}
	packager := packagers[format]
	path = filepath.Join(c.Out, packager.ConventionalFileName(info))
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("%s package: %w", format, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("%s package %s: %w", format, path, cerr)
		}
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	// Packagers change the info they are given (contents prepared for
	// their format), so each call gets its own from Info.
	if err := packager.Package(info, f); err != nil {
		return "", fmt.Errorf("%s package %s: %w", format, path, err)
	}
	return path, nil
}

// semverish is a version nFPM splits into version, prerelease and metadata.
var semverish = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+([-+].*)?$`)

// notVersionChar is what PackageVersion replaces in other versions.
var notVersionChar = regexp.MustCompile(`[^A-Za-z0-9.]+`)

// PackageVersion maps a build version to the package's version and
// prerelease. A release (v1.2.3, 1.2.3-rc.1) is given without its v, for nFPM
// to split. Anything else (a `git describe --always --dirty` such as
// 3b2d972-dirty, or "development") becomes 0.0.0 with the prerelease
// git.<version>, which dpkg and rpm sort before any release: 0.0.0~git.3b2d972.dirty.
func PackageVersion(v string) (version, prerelease string) {
	if semverish.MatchString(v) {
		return strings.TrimPrefix(v, "v"), ""
	}
	return "0.0.0", "git." + strings.Trim(notVersionChar.ReplaceAllString(v, "."), ".")
}
