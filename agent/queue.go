package agent

import (
	"context"
	"sync"
)

// workQueue holds admitted jobs until a worker runs them: at most
// maxRunning run at once and waiting more wait. Workers are started as
// jobs are added and end when the queue is empty, so an idle agent has
// none.
type workQueue struct {
	maxRunning, waiting int
	run                 func(ctx context.Context, r *job)
	metrics             *Metrics

	// guards jobs, closed, running and busy: jobs are added until close
	mu      sync.Mutex
	jobs    chan *job
	closed  bool
	running int // workers running, at most maxRunning
	busy    int // workers running a job
	// workers are the goroutines running jobs (and the assigner, which
	// the shutdown waits for likewise)
	workers sync.WaitGroup
	// ctx is what running jobs see; Run sets it before serving
	ctx context.Context
}

func newWorkQueue(maxRunning, waiting int, run func(context.Context, *job), metrics *Metrics) *workQueue {
	return &workQueue{maxRunning: maxRunning, waiting: waiting, run: run, metrics: metrics, jobs: make(chan *job, waiting+maxRunning), ctx: context.Background()}
}

// add queues an admitted job unless the queue is closed or waiting jobs
// already wait (ones a free worker is about to take do not count), and
// starts a worker for it when fewer than maxRunning run.
func (q *workQueue) add(r *job) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || len(q.jobs) >= q.waiting+q.maxRunning-q.busy {
		return false
	}
	q.jobs <- r // never blocks: the queue holds waiting+maxRunning
	q.metrics.queueDepth(len(q.jobs))
	if q.running < q.maxRunning {
		q.running++
		q.workers.Add(1)
		go q.work()
	}
	return true
}

// work runs queued jobs until the queue is empty.
func (q *workQueue) work() {
	defer q.workers.Done()
	for {
		q.mu.Lock()
		select {
		case r := <-q.jobs:
			q.busy++
			q.mu.Unlock()
			q.metrics.queueDepth(len(q.jobs))
			q.run(q.ctx, r)
			q.mu.Lock()
			q.busy--
			q.mu.Unlock()
		default:
			q.running--
			q.mu.Unlock()
			return
		}
	}
}

// close stops taking jobs; those queued still run.
func (q *workQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}
