package facts_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/shirou/gopsutil/v4/host"

	"github.com/ccm-fleet/ccm/facts"
)

var _ = Describe("host facts", func() {
	It("are what gopsutil's host.Info finds", func() {
		want, err := host.InfoWithContext(context.Background())
		Expect(err).ToNot(HaveOccurred())
		f, err := facts.Gather(context.Background(), facts.Options{})
		Expect(err).ToNot(HaveOccurred())
		Expect(f["platform"]).To(Equal(want.Platform))
		Expect(f["os"]).To(Equal(want.PlatformFamily))
		Expect(f["platform_version"]).To(Equal(want.PlatformVersion))
		Expect(f["kernel"]).To(Equal(want.KernelVersion))
		Expect(f["virtualization"]).To(Equal(want.VirtualizationSystem))
		info := f["host"].(map[string]any)["info"].(map[string]any)
		Expect(info).To(HaveKeyWithValue("hostId", want.HostID))
		Expect(info).To(HaveKeyWithValue("kernelArch", want.KernelArch))
		Expect(info).To(HaveKeyWithValue("virtualizationRole", want.VirtualizationRole))
		Expect(info).To(HaveKeyWithValue("platformFamily", want.PlatformFamily))
		Expect(info["procs"]).To(BeNumerically(">", 0))
		Expect(info["bootTime"]).To(BeNumerically("~", want.BootTime, 2))
	})
})
