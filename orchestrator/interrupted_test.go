package orchestrator_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
)

// interruptTimeout bounds the waits of these specs on a loaded machine.
const interruptTimeout = 30 * time.Second

var _ = Describe("Client.Run interrupted", func() {
	It("lists the hosts still running apart from those that did not reply, with exit code 130", func() {
		fl := fleettest.Start(GinkgoT(), 4, nil, "os=debian,rhel")
		client := orchestrator.New(fl.Connect(GinkgoT()), orchestrator.WithLogger(slog.New(slog.NewTextHandler(GinkgoWriter, nil))))
		dir := GinkgoT().TempDir()
		started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
		Expect(os.Mkdir(started, 0o755)).To(Succeed())
		DeferCleanup(os.WriteFile, release, []byte{}, os.FileMode(0o644))
		script := filepath.Join(dir, "slow.sh")
		Expect(os.WriteFile(script, []byte("#!/bin/sh\nmktemp \"$1/XXXXXX\" >/dev/null\nwhile [ ! -e \"$2\" ]; do sleep 0.1; done\n"), 0o755)).To(Succeed())

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			defer GinkgoRecover()
			defer cancel()
			Eventually(func() ([]os.DirEntry, error) { return os.ReadDir(started) }).WithTimeout(interruptTimeout).Should(HaveLen(len(fl.Identities)))
		}()
		res, err := client.Run(ctx, orchestrator.Request{
			Ensure: ensureRequest("exec", map[string]any{"name": script + " " + started + " " + release}),
			Hosts:  fl.Identities, Timeout: interruptTimeout,
		})
		Expect(errors.Is(err, orchestrator.ErrInterrupted)).To(BeTrue(), "%v", err)
		Expect(errors.Is(err, context.Canceled)).To(BeTrue(), "%v", err)
		Expect(res).NotTo(BeNil())
		Expect(res.Interrupted).To(BeTrue())
		Expect(res.Running).To(Equal(fl.Identities))
		Expect(res.NoReply).To(BeEmpty())
		Expect(res.Hosts).To(BeEmpty())
		Expect(res.Summary.Hosts).To(Equal(orchestrator.HostCounts{}))
		Expect(res.ExitCode).To(Equal(protocol.ExitInterrupted))
	})
})
