package filetype

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"
)

// ChecksumBytes returns the hex SHA-256 of b, as Status reports checksums.
func ChecksumBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// checksumBuffers are the read buffers of ChecksumReader: a status check
// hashes the file on every request, and a fresh 32 KiB buffer each time
// was most of what it allocated.
var checksumBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// ChecksumReader returns the hex SHA-256 of everything r yields, stopping
// early when ctx is cancelled.
func ChecksumReader(ctx context.Context, r io.Reader) (string, error) {
	h := sha256.New()
	buf := checksumBuffers.Get().(*[]byte)
	defer checksumBuffers.Put(buf)
	if _, err := io.CopyBuffer(h, ContextReader(ctx, r), *buf); err != nil {
		return "", err
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])), nil
}

// ChecksumFile returns the hex SHA-256 of the file at path.
func ChecksumFile(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	return checksumRegular(ctx, path, f)
}

// checksumRegular is the hex SHA-256 of the open file f, named name in
// errors, when it is a regular file (ErrUnsupportedFileType otherwise); it
// closes f.
func checksumRegular(ctx context.Context, name string, f *os.File) (string, error) {
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s %w", name, ErrUnsupportedFileType)
	}
	return ChecksumReader(ctx, f)
}

// ContextReader wraps r so that reads fail with ctx's error once ctx is done;
// copies of large files stop promptly on cancellation.
func ContextReader(ctx context.Context, r io.Reader) io.Reader {
	return &ctxReader{ctx: ctx, r: r}
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
