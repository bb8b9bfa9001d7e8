package broker

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"os"
)

// maxPEMSize bounds each TLS file the broker reads.
const maxPEMSize = 1 << 20

// checkTLSFiles loads the configured TLS files one by one so that an error
// names the file at fault: unreadable, not PEM, a key that does not match
// the certificate, a CA file without certificates. Errors wrap
// ErrInvalidConfig.
func checkTLSFiles(t TLSConfig) error {
	certPEM, err := readPEMFile("tls cert", t.Cert, "CERTIFICATE")
	if err != nil {
		return err
	}
	keyPEM, err := readPEMFile("tls key", t.Key, "")
	if err != nil {
		return err
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return fmt.Errorf("%w: tls key %s does not match cert %s: %w", ErrInvalidConfig, t.Key, t.Cert, err)
	}
	if t.CA != "" {
		caPEM, err := readPEMFile("tls ca", t.CA, "CERTIFICATE")
		if err != nil {
			return err
		}
		if !x509.NewCertPool().AppendCertsFromPEM(caPEM) {
			return fmt.Errorf("%w: tls ca %s: no usable certificate in it", ErrInvalidConfig, t.CA)
		}
	}
	return nil
}

// readPEMFile reads a bounded PEM file and checks it holds a block (of
// type want, when set).
func readPEMFile(what, path, want string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s: %w", ErrInvalidConfig, what, path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPEMSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s: %w", ErrInvalidConfig, what, path, err)
	}
	if len(data) > maxPEMSize {
		return nil, fmt.Errorf("%w: %s %s: larger than %d bytes", ErrInvalidConfig, what, path, maxPEMSize)
	}
	rest := data
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			if want == "" {
				return nil, fmt.Errorf("%w: %s %s: no PEM block in it", ErrInvalidConfig, what, path)
			}
			return nil, fmt.Errorf("%w: %s %s: no PEM %s block in it", ErrInvalidConfig, what, path, want)
		}
		if want == "" || b.Type == want {
			return data, nil
		}
	}
}
