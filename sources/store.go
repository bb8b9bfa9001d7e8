package sources

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultBucket is the object store CCM's documentation stores bundles in
// (obj://ccm-manifests/app.tar.gz); the broker and "history init" create
// it.
const DefaultBucket = "ccm-manifests"

// EnsureBundleStore creates the object store bucket for bundles, or
// leaves an existing one as it is, with replicas copies.
func EnsureBundleStore(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) (jetstream.ObjectStore, error) {
	if replicas < 1 {
		replicas = 1
	}
	obs, err := js.ObjectStore(ctx, bucket)
	if err == nil {
		return obs, nil
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("manifest bundles %s: %w", bucket, err)
	}
	obs, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: bucket, Description: "CCM manifest bundles", Replicas: replicas, MaxBytes: -1})
	if err != nil {
		return nil, fmt.Errorf("manifest bundles %s: %w", bucket, err)
	}
	return obs, nil
}
