package runner

import (
	"os/exec"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("processTable.scan", func() {
	It("waits for a child being started to be registered, and never takes it for an orphan", func() {
		// A start in progress, as in startCommand: the child exists, has this
		// process as parent and a group of its own, and is not registered yet.
		procs.start.RLock()
		cmd := exec.Command("/bin/sleep", "30")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			procs.start.RUnlock()
			Fail(err.Error())
		}
		pid := cmd.Process.Pid
		DeferCleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			procs.unregister(pid)
		})
		// A command is running, so an orphan seen now would be its to kill.
		sc := &execScope{id: "scan-test", tracked: map[int]uint64{}}
		procs.activate(sc)
		DeferCleanup(func() { _, stopped := procs.deactivate(sc); _ = stopped })

		scanned := make(chan struct{})
		go func() {
			defer close(scanned)
			_, _ = procs.scan()
		}()
		Consistently(scanned).WithTimeout(300*time.Millisecond).ShouldNot(BeClosed(), "the scan waits for the start")
		procs.register(pid)
		procs.start.RUnlock()
		Eventually(scanned).WithTimeout(5 * time.Second).Should(BeClosed())

		procs.mu.Lock()
		_, orphan := procs.orphans[pid]
		procs.mu.Unlock()
		Expect(orphan).To(BeFalse(), "a registered child is not an orphan")
	})
})

var _ = Describe("anyExited", func() {
	It("says whether a child exited and was not waited for, and leaves it to its owner", func() {
		running := exec.Command("/bin/sleep", "30")
		Expect(running.Start()).To(Succeed())
		DeferCleanup(func() {
			_ = running.Process.Kill()
			_ = running.Wait()
		})
		Consistently(anyExited, 300*time.Millisecond, 20*time.Millisecond).Should(BeFalse(), "a running child has not exited")

		done := exec.Command("/bin/true")
		Expect(done.Start()).To(Succeed())
		Eventually(anyExited, 10*time.Second, 10*time.Millisecond).Should(BeTrue())
		Expect(anyExited()).To(BeTrue(), "asking does not wait for it")
		Expect(done.Wait()).To(Succeed(), "its owner still gets its exit status")
		Expect(done.ProcessState.ExitCode()).To(Equal(0))
		Expect(anyExited()).To(BeFalse())
	})
})
