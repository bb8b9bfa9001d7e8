// Package facts gathers what is known about a host: flat, snake_case
// standard facts that filters and templates use without knowing any tool's
// layout (identity, hostname, os, platform, platform_version, kernel, arch,
// cpus, memory_mb, virtualization), the full nested facts under host and
// memory for dotted lookups (facts.host.info.platformFamily), and custom
// facts from a YAML or JSON file and from k=v pairs, which override the
// gathered ones.
package facts
