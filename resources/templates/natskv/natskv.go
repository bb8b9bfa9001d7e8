package natskv

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/resources/templates"
)

// MaxValue bounds the value Reader returns.
const MaxValue = 1 << 20

// ErrTooLarge is returned when a value is larger than MaxValue.
var ErrTooLarge = errors.New("value too large")

// Reader is a templates.KVReader over JetStream key-value buckets.
type Reader struct {
	js jetstream.JetStream
}

var _ templates.KVReader = (*Reader)(nil)

// New returns a Reader over js.
func New(js jetstream.JetStream) *Reader { return &Reader{js: js} }

// KVGet returns the latest value of key in bucket. A bucket without the key,
// or whose latest entry deletes or purges it, gives an error wrapping
// templates.ErrMissingKey; so does a bucket that does not exist.
func (r *Reader) KVGet(ctx context.Context, bucket, key string) ([]byte, error) {
	kv, err := r.js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("bucket %s: %w: no such bucket", bucket, templates.ErrMissingKey)
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", bucket, err)
	}
	entry, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, fmt.Errorf("bucket %s key %s: %w", bucket, key, templates.ErrMissingKey)
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %s key %s: %w", bucket, key, err)
	}
	if entry.Operation() != jetstream.KeyValuePut {
		return nil, fmt.Errorf("bucket %s key %s: %w", bucket, key, templates.ErrMissingKey)
	}
	if len(entry.Value()) > MaxValue {
		return nil, fmt.Errorf("bucket %s key %s: %w: %d bytes, the limit is %d", bucket, key, ErrTooLarge, len(entry.Value()), MaxValue)
	}
	return entry.Value(), nil
}
