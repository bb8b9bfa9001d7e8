package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/choria-io/fisk"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/sources"
)

// manifestPutFlags are the flags of "manifest put".
type manifestPutFlags struct {
	dir    string
	target string
	key    string
	conn   *connflags.Flags
}

func (a *app) registerManifest(cli *fisk.Application) {
	man := cli.Command("manifest", "Publish manifest bundles for CCM agents")
	c := &manifestPutFlags{}
	put := man.Command("put", "Pack a directory holding manifest.yaml (with its templates and file sources) into a tarball, sign it and store it in a JetStream object store, where agents watching it apply it within seconds")
	put.Arg("dir", "Directory holding manifest.yaml").Required().StringVar(&c.dir)
	put.Arg("target", "Where to store it: obj://bucket/key.tar.gz").Required().StringVar(&c.target)
	put.Flag("key", "Sign the bundle with this nkeys seed file; agents apply it only when their policy trusts this key").Envar("CCM_KEY").PlaceHolder("FILE").Required().StringVar(&c.key)
	c.conn = connflags.Register(put)
	put.Action(func(*fisk.ParseContext) error { return a.manifestPut(c) })
}

// manifestPut packs, signs and stores a bundle.
func (a *app) manifestPut(c *manifestPutFlags) error {
	src, err := sources.Parse(c.target)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	if src.Kind != sources.KindObject {
		return program.Exit(protocol.ExitError, fmt.Errorf("manifest put: %s: the target must be obj://bucket/key", c.target))
	}
	kp, err := loadSeed(c.key)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	// The manifest must parse here as the agent will parse it.
	if _, err := manifest.Load(filepath.Join(c.dir, sources.ManifestFile)); err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	data, err := sources.Pack(c.dir)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	sig, err := sources.SignBundle(data, src.Location(), time.Now(), kp)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	ctx, cancel := a.signalContext()
	defer cancel()
	nc, err := a.connect(ctx, c.conn)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	obs, err := js.ObjectStore(ctx, src.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = sources.EnsureBundleStore(ctx, js, src.Bucket, 1)
	}
	if err != nil {
		return program.Exit(protocol.ExitError, fmt.Errorf("manifest put: object store %s: %w", src.Bucket, err))
	}
	info, err := obs.Put(ctx, jetstream.ObjectMeta{Name: src.Key, Metadata: sig.Metadata()}, bytes.NewReader(data))
	if err != nil {
		return program.Exit(protocol.ExitError, fmt.Errorf("manifest put: %s: %w", src, err))
	}
	fmt.Fprintf(a.Stdout, "stored %s: %d bytes, sha256 %s, signed by %s at %s\n", src, info.Size, sig.SHA256, shortKey(sig.Signer), sig.Created.Format(time.RFC3339))
	return nil
}
