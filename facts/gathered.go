package facts

import (
	"context"
	"fmt"
	"net"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/mem"
	gnet "github.com/shirou/gopsutil/v4/net"
)

// The trees below are CCM's fact tree, with CCM's field names (gopsutil's
// JSON names): cpu.info, memory.virtual and memory.swap.{info,devices},
// network.{interfaces,addresses,default_ipv4,default_ipv6} and
// partition.{partitions,usage}. A source that cannot be read leaves its
// tree with empty values, as in CCM: facts are best effort.

// maxListed bounds each gathered list (interfaces, partitions, swap
// devices); maxCPUs bounds cpu.info (about 1 KiB of JSON each), so that the
// facts of a large host still fit in one registry record.
const (
	maxListed = 1024
	maxCPUs   = 256
)

// cpuFacts is CCM's cpu tree: info, one entry per logical CPU.
func cpuFacts(ctx context.Context) map[string]any {
	out := map[string]any{"info": []any{}}
	if info, err := cpu.InfoWithContext(ctx); err == nil {
		if len(info) > maxCPUs {
			info = info[:maxCPUs]
		}
		out["info"] = toList(info)
	}
	return out
}

// swapFacts is CCM's memory.swap tree.
func swapFacts(ctx context.Context) map[string]any {
	out := map[string]any{"info": map[string]any{}, "devices": []any{}}
	if s, err := mem.SwapMemoryWithContext(ctx); err == nil {
		out["info"] = toMap(s)
	}
	if d, err := mem.SwapDevicesWithContext(ctx); err == nil {
		out["devices"] = toList(bounded(d))
	}
	return out
}

// partitionFacts is CCM's partition tree: the mounted partitions and the
// usage of each that can be read.
func partitionFacts(ctx context.Context) map[string]any {
	out := map[string]any{"partitions": []any{}, "usage": []any{}}
	parts, err := disk.PartitionsWithContext(ctx, false)
	if err != nil || len(parts) == 0 {
		return out
	}
	parts = bounded(parts)
	var usage []*disk.UsageStat
	for _, p := range parts {
		if ctx.Err() != nil {
			break
		}
		if u, err := disk.UsageWithContext(ctx, p.Mountpoint); err == nil {
			usage = append(usage, u)
		}
	}
	out["partitions"] = toList(parts)
	out["usage"] = toList(usage)
	return out
}

// probe4 and probe6 are the addresses whose route names the default
// interfaces; a UDP "connection" only looks the route up, nothing is sent.
const (
	probe4 = "1.1.1.1:53"
	probe6 = "[2001:4860:4860::8888]:53"
)

// networkFacts is CCM's network tree: the interfaces, their routable
// addresses (each with its interface, whether it is IPv4 and whether the
// interface holds the default route), and the addresses of the default
// IPv4 and IPv6 interfaces. primaryIP, which CCM's registration examples
// read, is default_ipv4, else default_ipv6.
func networkFacts(ctx context.Context) map[string]any {
	out := map[string]any{"interfaces": []any{}, "addresses": []any{}, "default_ipv4": "", "default_ipv6": "", "primaryIP": ""}
	ifaces, err := gnet.InterfacesWithContext(ctx)
	if err != nil {
		return out
	}
	ifaces = bounded(ifaces)
	out["interfaces"] = toList(ifaces)
	dflt4, _ := defaultInterface(ctx, "udp4", probe4)
	dflt6, _ := defaultInterface(ctx, "udp6", probe6)
	addresses := []any{}
	for _, i := range ifaces {
		for _, a := range i.Addrs {
			ip, _, err := net.ParseCIDR(a.Addr)
			if err != nil || ip.IsLinkLocalMulticast() || ip.IsLinkLocalUnicast() || ip.IsLoopback() || ip.IsMulticast() || ip.IsUnspecified() {
				continue
			}
			v4 := ip.To4() != nil
			isDefault := v4 && dflt4 == i.Name || !v4 && dflt6 == i.Name
			addresses = append(addresses, map[string]any{"interface": i.Name, "address": ip.String(), "ipv4": v4, "default": isDefault})
			switch {
			case isDefault && v4:
				out["default_ipv4"] = ip.String()
			case isDefault:
				out["default_ipv6"] = ip.String()
			}
		}
	}
	out["addresses"] = addresses
	if out["default_ipv4"] != "" {
		out["primaryIP"] = out["default_ipv4"]
	} else {
		out["primaryIP"] = out["default_ipv6"]
	}
	return out
}

// defaultInterface names the interface holding the local address of a
// route to address.
func defaultInterface(ctx context.Context, network, address string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, address)
	if err != nil {
		return "", fmt.Errorf("no default route for %s: %w", network, err)
	}
	local := conn.LocalAddr().(*net.UDPAddr).IP
	_ = conn.Close()
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, iface := range ifaces {
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(local) {
				return iface.Name, nil
			}
		}
	}
	return "", fmt.Errorf("no interface has %s", local)
}

func bounded[T any](list []T) []T {
	if len(list) > maxListed {
		return list[:maxListed]
	}
	return list
}

// toList converts a gathered list to JSON-shaped values, as CCM emits it.
func toList[T any](list []T) []any {
	out := make([]any, 0, len(list))
	for _, v := range list {
		out = append(out, toMap(v))
	}
	return out
}
