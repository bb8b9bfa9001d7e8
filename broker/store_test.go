package broker_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
)

// tinyStore mounts a tmpfs of size bytes and returns its directory; the
// spec unmounts it. It skips when the process cannot mount (not root).
func tinyStore(size int) string {
	GinkgoHelper()
	if os.Geteuid() != 0 {
		Skip("mounting a tmpfs needs root")
	}
	dir := GinkgoT().TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		Skip(fmt.Sprintf("cannot mount a tmpfs: %v: %s", err, out))
	}
	DeferCleanup(func() {
		out, err := exec.Command("umount", dir).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	})
	return dir
}

var _ = Describe("Broker store sizing", func() {
	It("limits the store to 75% of a real disk's free space, logs it and warns near the limit", func() {
		const size = 2 << 20
		dir := tinyStore(size)
		logs := gbytes.NewBuffer()
		b := brokertest.StartConfig(GinkgoT(), broker.Config{StoreDir: dir + "/js"},
			broker.WithLogger(slog.New(slog.NewTextHandler(logs, nil))), broker.WithStoreCheckInterval(50*time.Millisecond))
		limit := b.StoreLimit()
		Expect(limit).To(BeNumerically("<=", size*3/4))
		Expect(limit).To(BeNumerically(">", size*3/4-64<<10), "a fresh tmpfs is nearly all free")
		Expect(string(logs.Contents())).To(And(ContainSubstring("broker JetStream store limit"),
			ContainSubstring(fmt.Sprintf("max_store_bytes=%d", limit)), ContainSubstring("75% of the")))

		nc := connect(b.ClientURL())
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "FILL", Subjects: []string{"fill"}, Storage: jetstream.FileStorage})
		Expect(err).NotTo(HaveOccurred())
		chunk := []byte(strings.Repeat("x", 16<<10))
		var refused error
		for range 2 * size / len(chunk) {
			if _, refused = js.Publish(ctx, "fill", chunk); refused != nil {
				break
			}
		}
		Expect(refused).To(MatchError(ContainSubstring("insufficient resources")), "the limit, not the disk, refuses writes")
		Eventually(logs).WithTimeout(10 * time.Second).Should(gbytes.Say("store nearly full"))
		Expect(strings.Count(string(logs.Contents()), "store nearly full")).To(Equal(1), "once per crossing")
	})

	It("caps a configured limit to the space available", func() {
		dir := tinyStore(1 << 20)
		b := brokertest.StartConfig(GinkgoT(), broker.Config{StoreDir: dir + "/js", MaxStore: 1 << 30})
		Expect(b.StoreLimit()).To(BeNumerically("<=", 1<<20))
		Expect(b.StoreLimit()).To(BeNumerically(">", 1<<19))
	})

	It("keeps a configured limit that fits", func() {
		b := brokertest.StartConfig(GinkgoT(), broker.Config{MaxStore: 8 << 20})
		Expect(b.StoreLimit()).To(Equal(int64(8 << 20)))
	})
})
