package agent

import (
	"fmt"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
)

var _ = Describe("The files a run asks to watch", func() {
	It("are read from the typed properties the engine prepared, managed or not, with the sensitive ones", func() {
		reg, err := providers.Builtin(providers.Options{})
		Expect(err).ToNot(HaveOccurred())
		dir := GinkgoT().TempDir()
		r := &job{}
		sess := engine.New(reg).NewSession(engine.RunOptions{Noop: true, Prepared: r.prepared})
		for _, props := range []map[string]any{
			{"name": filepath.Join(dir, "motd"), "ensure": "present", "content": "x\n", "owner": "root", "group": "root", "mode": "0644", "watch": true},
			{"name": filepath.Join(dir, "plain"), "ensure": "present", "content": "x\n", "owner": "root", "group": "root", "mode": "0644", "sensitive": true},
			{"name": filepath.Join(dir, "unmanaged"), "ensure": "present", "content": "x\n", "owner": "root", "group": "root", "mode": "0644", "watch": true, "control": map[string]any{"if": "false"}},
		} {
			_, err := sess.Prepare(engine.Spec{Type: protocol.TypeFile, Properties: props})
			Expect(err).ToNot(HaveOccurred())
		}
		Expect(r.watched).To(Equal([]string{filepath.Join(dir, "motd"), filepath.Join(dir, "unmanaged")}))
		Expect(r.sensitive).To(Equal(map[string]bool{"file#" + filepath.Join(dir, "plain"): true}))
	})

	It("are not taken from a resource the policy refused", func() {
		reg, err := providers.Builtin(providers.Options{})
		Expect(err).ToNot(HaveOccurred())
		r := &job{}
		refuse := func(*engine.Prepared) error { return errForbiddenForTest }
		sess := engine.New(reg).NewSession(engine.RunOptions{Noop: true, Guard: refuse, Prepared: r.prepared})
		_, err = sess.Prepare(engine.Spec{Type: protocol.TypeFile, Properties: map[string]any{"name": "/etc/motd", "ensure": "present", "content": "x\n", "owner": "root", "group": "root", "mode": "0644", "watch": true}})
		Expect(err).To(MatchError(errForbiddenForTest))
		Expect(r.watched).To(BeEmpty())
	})
})

var errForbiddenForTest = fmt.Errorf("refused for the test: %w", resources.ErrForbidden)
