package scaffoldchoria_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
	"github.com/ccm-fleet/ccm/resources/templates"
)

func TestScaffoldChoria(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Scaffold Choria Provider Suite")
}

// writeTree creates files (relative path -> content) below dir.
func writeTree(dir string, files map[string]string) {
	GinkgoHelper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
		Expect(os.WriteFile(path, []byte(content), 0o644)).To(Succeed())
	}
}

func readFile(path string) string {
	GinkgoHelper()
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// newProps returns validated properties for target rendered from source.
func newProps(target, source, engine string, mod ...func(*scaffoldtype.Properties)) *scaffoldtype.Properties {
	GinkgoHelper()
	p := &scaffoldtype.Properties{Source: source, Engine: engine}
	p.Name = target
	for _, m := range mod {
		m(p)
	}
	Expect(p.Validate()).To(Succeed())
	return p
}

func testEnv() *templates.Env {
	return templates.New(
		map[string]any{"hostname": "web01", "os": map[string]any{"family": "debian"}},
		map[string]any{"port": 8080, "services": []any{"api", "worker"}},
	)
}
