package sources

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// stalledResult is an object store result as nats.go's behaves while a
// chunk never comes: Read waits without watching any context, and Close
// waits for that Read (they share one lock).
type stalledResult struct {
	mu      sync.Mutex
	release chan struct{}
	closed  bool
}

func (r *stalledResult) Read([]byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	<-r.release
	return 0, errors.New("read pipe: i/o timeout")
}

func (r *stalledResult) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return nil
}

func (r *stalledResult) Info() (*jetstream.ObjectInfo, error) { return &jetstream.ObjectInfo{}, nil }
func (r *stalledResult) Error() error                         { return nil }

var _ = Describe("Reading an object store bundle", func() {
	It("returns as soon as its context ends while a chunk never comes, and closes the result once the read gives up", func() {
		res := &stalledResult{release: make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := readObject(ctx, res)
			done <- err
		}()
		Consistently(done).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
		cancel()
		Eventually(done).WithTimeout(2 * time.Second).Should(Receive(MatchError(context.Canceled)))

		close(res.release) // the fetch's deadline: the read gives up
		Eventually(func() bool {
			res.mu.Lock()
			defer res.mu.Unlock()
			return res.closed
		}).WithTimeout(2 * time.Second).Should(BeTrue())
	})
})
