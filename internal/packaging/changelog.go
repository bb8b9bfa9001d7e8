package packaging

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/files"
)

// DebChangelog is the Debian changelog a .deb carries (Debian policy
// 12.7; lintian's debian-changelog-file-missing): one entry for the
// version built, gzipped as lintian expects (-9, no name or time).
const DebChangelog = "/usr/share/doc/ccm-fleet/changelog.Debian.gz"

// maintainer is the package's maintainer, in the control file and the
// changelog's trailer.
const maintainer = "CCM Fleet <ccm-fleet@users.noreply.github.com>"

// debVersion is the version dpkg gives info's package, as nFPM writes it
// into the control file: [epoch:]version[~prerelease][+metadata][-release].
func debVersion(info *nfpm.Info) string {
	v := info.Version
	if info.Epoch != "" {
		v = info.Epoch + ":" + v
	}
	if info.Prerelease != "" {
		v += "~" + info.Prerelease
	}
	if info.VersionMetadata != "" {
		v += "+" + info.VersionMetadata
	}
	if info.Release != "" {
		v += "-" + info.Release
	}
	return v
}

// debianChangelog is the changelog of info's package (after
// nfpm.WithDefaults), built by c: one entry naming the build's version
// and commit, dated c.Date (the build's time when that is not RFC 3339).
func debianChangelog(c Config, info *nfpm.Info) string {
	date := info.MTime
	if date.IsZero() {
		date = time.Now()
	}
	built := "Built from CCM Fleet " + c.Version
	if c.Commit != "" {
		built += ", commit " + c.Commit
	}
	return fmt.Sprintf("%s (%s) unstable; urgency=medium\n\n  * %s.\n\n -- %s  %s\n",
		info.Name, debVersion(info), built, maintainer, date.UTC().Format(time.RFC1123Z))
}

// withDebChangelog writes info's changelog, gzipped, into dir and adds it
// to info's contents as DebChangelog.
func withDebChangelog(c Config, info *nfpm.Info, dir string) error {
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return fmt.Errorf("changelog: %w", err)
	}
	if _, err := zw.Write([]byte(debianChangelog(c, info))); err != nil {
		return fmt.Errorf("changelog: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("changelog: %w", err)
	}
	src := filepath.Join(dir, "changelog.Debian.gz")
	if err := os.WriteFile(src, gz.Bytes(), 0o644); err != nil {
		return fmt.Errorf("changelog: %w", err)
	}
	info.Contents = append(info.Contents, &files.Content{Source: src, Destination: DebChangelog, Type: files.TypeFile,
		FileInfo: &files.ContentFileInfo{Mode: 0o644, MTime: info.MTime}})
	return nil
}
