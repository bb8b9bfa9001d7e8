package sources

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/jsstore"
)

// DefaultBucket is the object store CCM's documentation stores bundles in
// (obj://ccm-manifests/app.tar.gz); the broker and "history init" create
// it.
const DefaultBucket = "ccm-manifests"

// EnsureBundleStore creates the object store bucket for bundles with
// replicas copies, or leaves an existing one as it is but for its consumer
// limit, raised to jsstore.FleetMaxConsumers.
func EnsureBundleStore(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) (jetstream.ObjectStore, error) {
	if replicas < 1 {
		replicas = 1
	}
	obs, err := js.ObjectStore(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: bucket, Description: "CCM manifest bundles", Replicas: replicas, MaxBytes: -1})
	}
	if err != nil {
		return nil, fmt.Errorf("manifest bundles %s: %w", bucket, err)
	}
	// Every CCM agent watches the bucket: one consumer each.
	if err := jsstore.RaiseConsumerLimit(ctx, js, "OBJ_"+bucket); err != nil {
		return nil, fmt.Errorf("manifest bundles %s: %w", bucket, err)
	}
	return obs, nil
}
