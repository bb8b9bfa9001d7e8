package facts_test

import (
	"context"
	"net"
	"reflect"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/host"
	"github.com/shirou/gopsutil/v4/mem"
	gnet "github.com/shirou/gopsutil/v4/net"

	"github.com/ccm-fleet/ccm/facts"
	"github.com/ccm-fleet/ccm/resources/templates"
)

var _ = Describe("CCM's fact tree", func() {
	var f map[string]any
	BeforeEach(func() {
		var err error
		f, err = facts.Gather(context.Background(), facts.Options{})
		Expect(err).NotTo(HaveOccurred())
	})

	It("has cpu, host, memory, network and partition with CCM's keys", func() {
		Expect(f["cpu"]).To(HaveKeyWithValue("info", Not(BeEmpty())))
		first := f["cpu"].(map[string]any)["info"].([]any)[0]
		Expect(first).To(And(HaveKey("modelName"), HaveKey("cores"), HaveKey("vendorId"), HaveKey("mhz")))

		Expect(f["memory"]).To(HaveKeyWithValue("virtual", HaveKey("total")))
		Expect(f["memory"]).To(HaveKeyWithValue("swap", And(HaveKey("info"), HaveKey("devices"))))

		network := f["network"].(map[string]any)
		Expect(network).To(And(HaveKey("interfaces"), HaveKey("addresses"), HaveKey("default_ipv4"), HaveKey("default_ipv6"), HaveKey("primaryIP")))
		Expect(network["interfaces"]).To(ContainElement(And(HaveKeyWithValue("name", "lo"), HaveKey("mtu"), HaveKey("hardwareAddr"), HaveKey("flags"), HaveKey("addrs"))))
		for _, a := range network["addresses"].([]any) {
			Expect(a).To(And(HaveKey("interface"), HaveKey("address"), HaveKey("ipv4"), HaveKey("default")))
			ip := net.ParseIP(a.(map[string]any)["address"].(string))
			Expect(ip).NotTo(BeNil())
			Expect(ip.IsLoopback()).To(BeFalse(), "loopback addresses are not listed")
		}

		partition := f["partition"].(map[string]any)
		Expect(partition["partitions"]).To(ContainElement(And(HaveKeyWithValue("mountpoint", "/"), HaveKey("device"), HaveKey("fstype"), HaveKey("opts"))))
		Expect(partition["usage"]).To(ContainElement(And(HaveKeyWithValue("path", "/"), HaveKey("total"), HaveKey("usedPercent"))))

		Expect(f["host"]).To(HaveKeyWithValue("info", And(HaveKey("hostname"), HaveKey("platformFamily"), HaveKey("kernelVersion"))))
	})

	It("primaryIP is the address of the default IPv4 interface, as the kernel routes", func() {
		network := f["network"].(map[string]any)
		conn, err := net.Dial("udp4", "1.1.1.1:53")
		if err != nil {
			// No IPv4 default route here: then there is no default address.
			Expect(network["default_ipv4"]).To(Equal(""))
			return
		}
		local := conn.LocalAddr().(*net.UDPAddr).IP.String()
		Expect(conn.Close()).To(Succeed())
		Expect(network["default_ipv4"]).To(Equal(local))
		Expect(network["primaryIP"]).To(Equal(local))
		Expect(network["addresses"]).To(ContainElement(And(HaveKeyWithValue("address", local), HaveKeyWithValue("default", true), HaveKeyWithValue("ipv4", true))))
	})

	It("keeps the short facts", func() {
		for _, k := range []string{"identity", "hostname", "os", "platform", "platform_version", "kernel", "arch", "cpus", "memory_mb", "virtualization"} {
			Expect(f).To(HaveKey(k))
		}
	})

	It("answers in expressions to the JSON names and to gopsutil's Go field names", func() {
		env := templates.New(f, nil)
		host := f["host"].(map[string]any)["info"].(map[string]any)["hostname"]
		Expect(env.Expand("${ Facts.host.info.Hostname }")).To(Equal(host))
		Expect(env.Expand("${ Facts.host.info.hostname }")).To(Equal(host))
		Expect(env.Expand("${ Facts.cpu.info[0].ModelName }")).To(Equal(f["cpu"].(map[string]any)["info"].([]any)[0].(map[string]any)["modelName"]))
		Expect(env.Expand("${ Facts.partition.partitions[0].Mountpoint != '' }")).To(Equal("true"))
	})

	It("maps every JSON name of the gopsutil types it gathers to the Go field name", func() {
		for _, v := range []any{host.InfoStat{}, cpu.InfoStat{}, mem.VirtualMemoryStat{}, mem.SwapMemoryStat{}, mem.SwapDevice{},
			gnet.InterfaceStat{}, gnet.InterfaceAddr{}, disk.PartitionStat{}, disk.UsageStat{}} {
			t := reflect.TypeOf(v)
			for i := range t.NumField() {
				field := t.Field(i)
				name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
				if name == "" || name == "-" || !field.IsExported() {
					continue
				}
				Expect(templates.GoName(name)).To(Equal(field.Name), "%s.%s (json %q)", t, field.Name, name)
			}
		}
	})
})
