package packaging

import (
	"os"
	"path/filepath"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/files"
)

// Installed paths the package owns. Where Debian and RPM-based systems
// differ, the plain name is Debian's and the RPM name says so.
const (
	AgentUnit  = "/lib/systemd/system/ccm-agent.service"
	BrokerUnit = "/lib/systemd/system/ccm-broker.service"
	// ConfigDir holds the agent's configuration.
	ConfigDir    = "/etc/ccm"
	AgentConfig  = "/etc/ccm/agent.yaml"
	PolicyConfig = "/etc/ccm/policy.yaml"
	AgentEnv     = "/etc/default/ccm-agent"
	BrokerEnv    = "/etc/default/ccm-broker"
	AgentState   = "/var/lib/ccm-agent"
	// Copyright is the Debian copyright file (DEP-5).
	Copyright = "/usr/share/doc/ccm-fleet/copyright"

	RPMAgentUnit  = "/usr/lib/systemd/system/ccm-agent.service"
	RPMBrokerUnit = "/usr/lib/systemd/system/ccm-broker.service"
	RPMAgentEnv   = "/etc/sysconfig/ccm-agent"
	RPMBrokerEnv  = "/etc/sysconfig/ccm-broker"
	// RPMLicenseDir holds LICENSE and NOTICE, marked %license.
	RPMLicenseDir = "/usr/share/licenses/ccm-fleet"
)

// License is the package's licence, as an SPDX identifier.
const License = "Apache-2.0"

// Summary is the package's one-line description.
const Summary = "CCM Fleet configuration management: agent, orchestrator and broker"

// Description is the package's long description, paragraphs separated
// by a blank line (dpkg shows it below Summary, rpm as %description).
const Description = `CCM Fleet manages the configuration of many hosts over NATS. An agent on
every host applies resources (files, packages, services, commands,
archives, scaffolds) when a signed request asks; operators select hosts by
their facts and run changes, dry runs and audits from one command line,
with every run recorded in JetStream.

This package installs ccm-agent with its systemd unit and its
configuration in /etc/ccm (requests are refused until policy.yaml trusts a
signing key); ccm-orch, the operators' command line; ccm-broker, an
embedded NATS server with JetStream, with a systemd unit for labs and
small sites; their manual pages; and bash, zsh and fish completion.

Nothing is enabled or started on install. An upgrade restarts the units
that are running; removal stops them; purge also deletes the
configuration and the links that enabled the units.`

// docFiles are the names of cmd's manual page and bash, zsh and fish
// completion scripts in the directory generateDocs writes.
func docFiles(cmd string) (man, bash, zsh, fish string) {
	return cmd + ".1.gz", cmd + ".bash", "_" + cmd, cmd + ".fish"
}

// Info is the nFPM description of the package for arch and format, with
// the binaries taken from binDir, the manual pages and completion
// scripts from docDir (see generateDocs) and everything else from
// c.Root's dist/ and the licence files in c.Root.
func Info(c Config, arch, format, binDir, docDir string) *nfpm.Info {
	dist := func(name string) string { return filepath.Join(c.Root, "dist", name) }
	version, prerelease := PackageVersion(c.Version)
	var mtime time.Time
	if t, err := time.Parse(time.RFC3339, c.Date); err == nil {
		mtime = t
	}
	file := func(src, dst string, mode os.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst, Type: files.TypeFile,
			FileInfo: &files.ContentFileInfo{Mode: mode, MTime: mtime}}
	}
	// Configuration the operator edits: dpkg conffiles and rpm
	// %config(noreplace), so upgrades keep the edited file (dpkg asks or
	// keeps it, rpm writes the new one beside it as .rpmnew).
	config := func(src, dst string) *files.Content {
		c := file(src, dst, 0o644)
		c.Type = files.TypeConfigNoReplace
		return c
	}
	agentUnit, brokerUnit, agentEnv, brokerEnv := AgentUnit, BrokerUnit, AgentEnv, BrokerEnv
	zshDir := "/usr/share/zsh/vendor-completions"
	scripts := nfpm.Scripts{
		PostInstall: dist("packager/deb/postinst"),
		PreRemove:   dist("packager/deb/prerm"),
		PostRemove:  dist("packager/deb/postrm"),
	}
	description := Summary + "\n" + Description
	if format == "rpm" {
		agentUnit, brokerUnit, agentEnv, brokerEnv = RPMAgentUnit, RPMBrokerUnit, RPMAgentEnv, RPMBrokerEnv
		zshDir = "/usr/share/zsh/site-functions"
		scripts = nfpm.Scripts{
			PostInstall: dist("packager/rpm/post"),
			PreRemove:   dist("packager/rpm/preun"),
			PostRemove:  dist("packager/rpm/postun"),
		}
		description = Description
	}
	contents := files.Contents{
		config(dist("agent.yaml"), AgentConfig),
		config(dist("policy.yaml"), PolicyConfig),
		config(dist("agent.env"), agentEnv),
		config(dist("broker.env"), brokerEnv),
		file(dist("ccm-agent.service"), agentUnit, 0o644),
		file(dist("ccm-broker.service"), brokerUnit, 0o644),
		// The agent's audit log and history spool: root only.
		{Destination: AgentState, Type: files.TypeDir,
			FileInfo: &files.ContentFileInfo{Mode: 0o700, MTime: mtime}},
	}
	if format == "rpm" {
		// rpm removes on erase only the directories a package owns: own
		// the two it makes (dpkg owns the directories in a .deb without
		// being told). The directories above the other files belong to
		// other packages on RPM-based systems (filesystem, systemd, the
		// shells).
		for _, dir := range []string{ConfigDir, RPMLicenseDir} {
			contents = append(contents, &files.Content{Destination: dir, Type: files.TypeDir,
				FileInfo: &files.ContentFileInfo{Mode: 0o755, MTime: mtime}})
		}
		for _, name := range []string{"LICENSE", "NOTICE"} {
			f := file(filepath.Join(c.Root, name), RPMLicenseDir+"/"+name, 0o644)
			f.Type = files.TypeRPMLicense
			contents = append(contents, f)
		}
	} else {
		contents = append(contents, file(dist("copyright"), Copyright, 0o644))
	}
	for _, cmd := range Commands {
		man, bash, zsh, fish := docFiles(cmd)
		contents = append(contents,
			file(filepath.Join(binDir, cmd), "/usr/bin/"+cmd, 0o755),
			file(filepath.Join(docDir, man), "/usr/share/man/man1/"+man, 0o644),
			file(filepath.Join(docDir, bash), "/usr/share/bash-completion/completions/"+cmd, 0o644),
			file(filepath.Join(docDir, zsh), zshDir+"/"+zsh, 0o644),
			file(filepath.Join(docDir, fish), "/usr/share/fish/vendor_completions.d/"+fish, 0o644),
		)
	}
	return &nfpm.Info{
		Name:        Name,
		Arch:        arch,
		Platform:    "linux",
		Version:     version,
		Prerelease:  prerelease,
		Release:     "1",
		Section:     "admin",
		Priority:    "optional",
		Maintainer:  maintainer,
		Description: description,
		Homepage:    "https://github.com/ccm-fleet/ccm",
		License:     License,
		MTime:       mtime,
		Overridables: nfpm.Overridables{
			Contents: contents,
			Scripts:  scripts,
			RPM:      nfpm.RPM{Group: "System Environment/Daemons", Summary: Summary},
		},
	}
}
