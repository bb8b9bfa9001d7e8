// Package facts gathers what is known about a host: flat, snake_case
// standard facts that filters and templates use without knowing any tool's
// layout (identity, hostname, os, platform, platform_version, kernel, arch,
// cpus, memory_mb, virtualization), CCM's nested fact tree with CCM's field
// names for dotted lookups (host.info, cpu.info, memory.virtual,
// memory.swap, network with default_ipv4/default_ipv6/primaryIP, addresses
// and interfaces, partition.partitions and partition.usage, e.g.
// facts.host.info.platformFamily), and custom
// facts from a YAML or JSON file and from k=v pairs, which override the
// gathered ones.
package facts
