package sources

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
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
			_, err := readObject(ctx, res, func() bool { return false })
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

	It("ends with errObjectReplaced soon after a stalled read's object was replaced, and not while it was the same", func() {
		defer func(d time.Duration) { objectStallCheck = d }(objectStallCheck)
		objectStallCheck = 20 * time.Millisecond
		res := &stalledResult{release: make(chan struct{})}
		defer close(res.release)
		var asked atomic.Int32
		isReplaced := atomic.Bool{}
		done := make(chan error, 1)
		go func() {
			_, err := readObject(context.Background(), res, func() bool {
				asked.Add(1)
				return isReplaced.Load()
			})
			done <- err
		}()
		Eventually(asked.Load).WithTimeout(2 * time.Second).Should(BeNumerically(">=", 2))
		Consistently(done).WithTimeout(100 * time.Millisecond).ShouldNot(Receive())
		isReplaced.Store(true)
		Eventually(done).WithTimeout(2 * time.Second).Should(Receive(MatchError(errObjectReplaced)))
	})

	It("does not ask whether the object was replaced while chunks keep coming", func() {
		defer func(d time.Duration) { objectStallCheck = d }(objectStallCheck)
		objectStallCheck = 250 * time.Millisecond
		pr, pw := io.Pipe()
		go func() {
			defer pw.Close()
			for range 10 {
				_, _ = pw.Write([]byte("chunk"))
				time.Sleep(5 * time.Millisecond)
			}
		}()
		var asked atomic.Int32
		data, err := readObject(context.Background(), &pipeResult{pr}, func() bool { asked.Add(1); return true })
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(Equal(strings.Repeat("chunk", 10)))
		Expect(asked.Load()).To(BeZero())
	})
})

// pipeResult is an object store result whose chunks come from a pipe.
type pipeResult struct{ *io.PipeReader }

func (r *pipeResult) Info() (*jetstream.ObjectInfo, error) { return &jetstream.ObjectInfo{}, nil }
func (r *pipeResult) Error() error                         { return nil }
