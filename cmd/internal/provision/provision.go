package provision

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/registration"
	"github.com/ccm-fleet/ccm/sources"
)

// Streams creates or updates the history stream, the node registry, the
// assignment store, the manifest bundle object store and the
// registration stream, and says so on w. hub, at a site broker, is the
// hub's JetStream domain, whose assignments the site's store mirrors. A
// site store that holds assignments of its own is left as it is: the rest
// is still set up, and the error wraps jsstore.ErrSiteAssignments.
func Streams(ctx context.Context, js jetstream.JetStream, hc jsstore.HistoryConfig, rc jsstore.RegistryConfig, hub string, w io.Writer) error {
	info, err := jsstore.EnsureHistory(ctx, js, hc)
	if err != nil {
		return err
	}
	limit := "no size limit"
	if info.Config.MaxBytes > 0 {
		limit = fmt.Sprintf("at most %d bytes", info.Config.MaxBytes)
	}
	fmt.Fprintf(w, "history stream %s: %s, records kept %s, %s\n", protocol.HistoryStream, ReplicasText(info.Config.Replicas), FormatAge(info.Config.MaxAge), limit)
	kv, err := jsstore.EnsureRegistry(ctx, js, rc)
	if err != nil {
		return err
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return fmt.Errorf("registry %s: %w", protocol.NodesBucket, err)
	}
	fmt.Fprintf(w, "node registry %s: %s, entries expire %s after their last heartbeat\n", protocol.NodesBucket, ReplicasText(rc.Replicas), st.TTL())
	var siteOwn error
	switch _, err := jsstore.EnsureAssignments(ctx, js, jsstore.AssignmentsConfig{Replicas: rc.Replicas, Hub: hub}); {
	case errors.Is(err, jsstore.ErrSiteAssignments):
		siteOwn = err
	case err != nil:
		return err
	case hub != "":
		fmt.Fprintf(w, "assignments %s: %s, a mirror of the hub's (domain %s)\n", protocol.AssignmentsBucket, ReplicasText(rc.Replicas), hub)
	default:
		fmt.Fprintf(w, "assignments %s: %s, %d revisions kept per assignment\n", protocol.AssignmentsBucket, ReplicasText(rc.Replicas), jsstore.AssignmentHistory)
	}
	if _, err := sources.EnsureBundleStore(ctx, js, sources.DefaultBucket, rc.Replicas); err != nil {
		return err
	}
	fmt.Fprintf(w, "manifest bundles %s: %s\n", sources.DefaultBucket, ReplicasText(rc.Replicas))
	if _, err := registration.EnsureStream(ctx, js, registration.DefaultStream, rc.Replicas, registration.DefaultMaxAge); err != nil {
		return err
	}
	fmt.Fprintf(w, "registration stream %s: %s, per-entry TTLs, expired entries' markers kept %s\n", registration.DefaultStream, ReplicasText(rc.Replicas), registration.DefaultMaxAge)
	return siteOwn
}

// ReplicasText is "1 replica" or "N replicas".
func ReplicasText(n int) string {
	if n == 1 {
		return "1 replica"
	}
	return fmt.Sprintf("%d replicas", n)
}
