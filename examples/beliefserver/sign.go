package main

import (
	"context"
	"flag"
	"path/filepath"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/trace"
)

// Signed checkpoints: with -data DIR and -sign-key FILE, every session's
// log (DIR/ID.trace, one hash chain per session: there is no one head for
// the whole directory) keeps a signed checkpoint of its head beside it,
// DIR/ID.trace.checkpoint, replaced atomically every -sign-every entries
// of that log and when the session's log is closed (evicted from the
// cache, or the server stops). Its origin is KEYNAME/ID, so a checkpoint
// of one session never passes for another's:
//
//	verity verify DIR/ID.trace -checkpoint DIR/ID.trace.checkpoint -pubkey PREFIX.pub -origin KEYNAME/ID
//
// With -db (a database several servers may share) or in memory there is
// no file beside a log and -sign-key is refused.

const signHelp = `
-sign-key FILE (with -data DIR): each session's log DIR/ID.trace keeps a
signed checkpoint (C2SP tlog-checkpoint, origin KEYNAME/ID) beside it in
DIR/ID.trace.checkpoint, every -sign-every entries and when it is closed;
check it with: verity verify DIR/ID.trace -checkpoint DIR/ID.trace.checkpoint
-pubkey PREFIX.pub -origin KEYNAME/ID. A -sign-key file that is malformed,
unreadable or readable by others is a usage error.
`

// signFlags are -sign-key and -sign-every.
type signFlags struct {
	keyFile string
	every   uint64
}

func (s *signFlags) add(fl *flag.FlagSet) {
	fl.StringVar(&s.keyFile, "sign-key", "", "with -data: sign checkpoints of each session's log with this key (verity keygen's PREFIX.key) into DIR/ID.trace.checkpoint")
	fl.Uint64Var(&s.every, "sign-every", 100, "with -sign-key: entries of a session's log between signed checkpoints (0: only when it is closed)")
}

// storage returns st, or with -sign-key a Storage whose session logs keep
// signed checkpoints in dir. It is called after flag parsing; its errors
// are usage errors.
func (s *signFlags) storage(st belief.Storage, dir string) (belief.Storage, error) {
	if s.keyFile == "" {
		return st, nil
	}
	if dir == "" {
		return nil, usagef("-sign-key needs -data DIR: the checkpoint of a session's log is a file beside it")
	}
	signer, err := trace.ReadSignerKeyFile(s.keyFile)
	if err != nil {
		return nil, usagef("-sign-key: %w", err)
	}
	return &signingStorage{Storage: st, dir: dir, signer: signer, every: s.every}, nil
}

// signingStorage wraps each session's store in a trace.CheckpointStore.
type signingStorage struct {
	belief.Storage
	dir    string
	signer *trace.CheckpointSigner
	every  uint64
}

// checkpointPath is where the checkpoint of session id's log is kept.
func checkpointPath(dir, id string) string { return filepath.Join(dir, id+".trace.checkpoint") }

func (s *signingStorage) wrap(ctx context.Context, id string, st trace.Store, err error) (trace.Store, error) {
	if err != nil {
		return nil, err
	}
	cs, err := trace.NewCheckpointStore(ctx, st, trace.CheckpointOptions{
		Signer: s.signer, Origin: s.signer.Name() + "/" + id, Path: checkpointPath(s.dir, id), Every: s.every,
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	return cs, nil
}

func (s *signingStorage) Create(ctx context.Context, id string) (trace.Store, error) {
	st, err := s.Storage.Create(ctx, id)
	return s.wrap(ctx, id, st, err)
}

func (s *signingStorage) Open(ctx context.Context, id string) (trace.Store, error) {
	st, err := s.Storage.Open(ctx, id)
	return s.wrap(ctx, id, st, err)
}
