package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/verity-go/verity/trace"
)

// signConfig is -sign-key and -checkpoint-every: with a signer key the
// proxy keeps a signed checkpoint of its log's head in LOG.checkpoint
// (trace.CheckpointStore), rewritten atomically every N entries and on
// exit. Its origin is the key's name.
type signConfig struct {
	keyFile  string
	every    uint64
	everySet bool
	signer   *trace.CheckpointSigner // loaded by load
}

// defaultCheckpointEvery is -checkpoint-every's default.
const defaultCheckpointEvery = 100

func addSignFlags(fs *flag.FlagSet, c *signConfig) {
	fs.StringVar(&c.keyFile, "sign-key", "", "sign checkpoints of the log's head with this key (verity keygen's PREFIX.key) into LOG.checkpoint")
	fs.Uint64Var(&c.every, "checkpoint-every", defaultCheckpointEvery, "with -sign-key: log entries between signed checkpoints (0: only on exit)")
}

// check runs after parsing: -checkpoint-every needs -sign-key.
func (c *signConfig) check(fs *flag.FlagSet) error {
	fs.Visit(func(f *flag.Flag) { c.everySet = c.everySet || f.Name == "checkpoint-every" })
	if c.everySet && c.keyFile == "" {
		return errors.New("-checkpoint-every needs -sign-key")
	}
	return nil
}

// load reads the signer key file; a malformed one, or one others may read,
// is a configuration error.
func (c *signConfig) load() error {
	if c.keyFile == "" {
		return nil
	}
	s, err := trace.ReadSignerKeyFile(c.keyFile)
	if err != nil {
		return fmt.Errorf("-sign-key: %w", err)
	}
	c.signer = s
	return nil
}

// checkpointPath is where the checkpoint of the log at logPath is kept.
func checkpointPath(logPath string) string { return logPath + ".checkpoint" }

// wrap returns st, or with -sign-key a store that keeps the checkpoint.
func (c *signConfig) wrap(ctx context.Context, st trace.Store, logPath string) (trace.Store, error) {
	if c.signer == nil {
		return st, nil
	}
	return trace.NewCheckpointStore(ctx, st, trace.CheckpointOptions{
		Signer: c.signer, Path: checkpointPath(logPath), Every: c.every,
	})
}
