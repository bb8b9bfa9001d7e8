// Package natskv reads values from NATS JetStream key-value buckets for the
// kvGet(bucket, key) function of expressions (templates.WithKV): a Reader
// over one JetStream context, bounded by the caller's context and a size
// limit.
package natskv
