package broker

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Store sizing and usage defaults.
const (
	// DefaultStoreFraction is the share of the space available to the
	// JetStream store (the disk's free space plus what the store already
	// holds) that the broker allows it when Config.MaxStore is 0.
	DefaultStoreFraction = 0.75
	// DefaultStoreCheckInterval is how often the broker compares the
	// store's usage with its limit.
	DefaultStoreCheckInterval = 30 * time.Second
	// StoreWarnRatio is the share of the limit above which the broker
	// warns, once per crossing.
	StoreWarnRatio = 0.9
)

// storeLimit chooses the JetStream file store limit from the configured
// one (0: not configured) and the space available to the store, the disk's
// free space plus what the store already holds. Not configured, it is
// DefaultStoreFraction of available; configured, it is that value but
// never more than available. It says how it chose in why.
func storeLimit(configured int64, available uint64) (limit int64, why string) {
	avail := int64(min(available, math.MaxInt64))
	switch {
	case configured > 0 && configured <= avail:
		return configured, "configured"
	case configured > 0:
		return avail, fmt.Sprintf("configured %d bytes, more than the %d bytes available: capped", configured, avail)
	}
	return int64(float64(avail) * DefaultStoreFraction), fmt.Sprintf("%.0f%% of the %d bytes available", DefaultStoreFraction*100, avail)
}

// storeAvailable is the space the store at dir may use: the free space of
// its file system plus the bytes the store already holds.
func storeAvailable(dir string) (uint64, error) {
	free, err := freeSpace(dir)
	if err != nil {
		return 0, fmt.Errorf("broker store %s: free space: %w", dir, err)
	}
	var used uint64
	err = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		used += uint64(info.Size())
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("broker store %s: size: %w", dir, err)
	}
	return free + used, nil
}

// chooseStoreLimitLocked sizes the JetStream store at dir (see
// storeLimit), logs the choice and keeps it for the run (and reloads).
func (b *Broker) chooseStoreLimitLocked(dir string) error {
	avail, err := storeAvailable(dir)
	if err != nil {
		b.storeLimit = max(b.cfg.MaxStore, 0)
		b.log.Warn("broker could not size the JetStream store from its free space", "store", dir, "max_store_bytes", b.cfg.MaxStore, "error", err)
		return nil
	}
	limit, why := storeLimit(b.cfg.MaxStore, avail)
	if limit <= 0 {
		return fmt.Errorf("broker store %s: no space available for JetStream (%s)", dir, why)
	}
	b.storeLimit = limit
	b.log.Info("broker JetStream store limit", "store", dir, "max_store_bytes", limit, "chosen", why)
	return nil
}

// storeWatch warns when the store's usage crosses StoreWarnRatio of its
// limit, and says when it is back under.
type storeWatch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startStoreWatchLocked starts the usage check of s; stopStoreWatchLocked
// stops it.
func (b *Broker) startStoreWatchLocked(s *server.Server) {
	ctx, cancel := context.WithCancel(context.Background())
	w := &storeWatch{cancel: cancel}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		b.watchStore(ctx, s)
	}()
	b.watch = w
}

func (b *Broker) stopStoreWatchLocked() {
	if b.watch == nil {
		return
	}
	b.watch.cancel()
	b.watch.wg.Wait()
	b.watch = nil
}

// watchStore checks s's JetStream usage every check interval until ctx
// ends.
func (b *Broker) watchStore(ctx context.Context, s *server.Server) {
	t := time.NewTicker(b.storeCheck)
	defer t.Stop()
	high := false
	for {
		used, limit, ok := storeUsage(s)
		if ok {
			high = b.noteStoreUsage(high, used, limit)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// noteStoreUsage logs a crossing of StoreWarnRatio and returns whether
// usage is now above it.
func (b *Broker) noteStoreUsage(high bool, used, limit int64) bool {
	now := limit > 0 && float64(used) > StoreWarnRatio*float64(limit)
	switch {
	case now && !high:
		b.log.Warn("broker JetStream store nearly full: writes (history, registry) will be refused at the limit",
			"used_bytes", used, "max_store_bytes", limit, "percent", used*100/limit)
	case !now && high:
		b.log.Info("broker JetStream store usage back under the warning level", "used_bytes", used, "max_store_bytes", limit)
	}
	return now
}

// storeUsage is the file store's usage and limit of s; ok is false when
// JetStream is off or does not answer.
func storeUsage(s *server.Server) (used, limit int64, ok bool) {
	if !s.JetStreamEnabled() {
		return 0, 0, false
	}
	info, err := s.Jsz(&server.JSzOptions{})
	if err != nil {
		return 0, 0, false
	}
	return int64(min(info.Store, math.MaxInt64)), info.Config.MaxStore, true
}

// StoreLimit is the JetStream file store limit the running broker chose at
// start (see Config.MaxStore); 0 when not running, without JetStream, or
// when it could not be sized.
func (b *Broker) StoreLimit() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv == nil {
		return 0
	}
	return b.storeLimit
}
