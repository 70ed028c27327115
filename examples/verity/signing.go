package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"

	"github.com/verity-go/verity/trace"
)

// Signed checkpoints (trace's "Signed checkpoints"): keygen makes a key
// pair, checkpoint sign signs a verified log's head, and verify
// -checkpoint checks a log against a signed head.

const signingUsage = `usage:
  verity keygen -name NAME -out PREFIX
        make an Ed25519 checkpoint key named NAME: PREFIX.key (the signer
        key, mode 0600, never overwritten) and PREFIX.pub (the verifier
        key to hand out); the verifier key is printed too
  verity checkpoint sign SRC -key PREFIX.key [-origin ORIGIN] [-out FILE]
        verify SRC and print (or write to FILE, atomically) a signed
        checkpoint of its head: the C2SP signed-note / tlog-checkpoint text
        (origin, size, base64 of the hash of entry size-1, a blank line,
        "— NAME BASE64(key id || signature)"); ORIGIN defaults to the
        key's name
  verity verify SRC -checkpoint FILE -pubkey PREFIX.pub [-origin ORIGIN]
        the checkpoint must be signed by the key and be for ORIGIN (default:
        the key's name), and the log must extend it: at least its size,
        the same hash at entry size-1. A rewritten log exits 6 (or 5 if
        its chain is broken too); a checkpoint that does not verify, 9.

A key file that cannot be read or is malformed, or a signer key file
others may read, is a usage error (exit 2).
`

// isBadCheckpoint reports whether err is a checkpoint that does not verify.
func isBadCheckpoint(err error) bool {
	return errors.Is(err, trace.ErrCheckpointMalformed) || errors.Is(err, trace.ErrCheckpointSignature) ||
		errors.Is(err, trace.ErrCheckpointOrigin)
}

func cmdKeygen(_ context.Context, e *env, args []string) error {
	fl := flag.NewFlagSet("keygen", flag.ContinueOnError)
	name := fl.String("name", "", "the key's name (by convention the log's origin, such as example.com/agent-7)")
	out := fl.String("out", "", "write PREFIX.key and PREFIX.pub")
	pos, err := parseFlags(fl, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef("keygen takes no arguments, got %q\n\n%s", pos, signingUsage)
	case *name == "" || *out == "":
		return usagef("keygen needs -name NAME and -out PREFIX\n\n%s", signingUsage)
	}
	skey, vkey, err := trace.GenerateCheckpointKey(nil, *name)
	if err != nil {
		return &usageError{err.Error()}
	}
	keyPath, pubPath := *out+".key", *out+".pub"
	for _, p := range []string{keyPath, pubPath} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s exists: keygen never overwrites a key", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := writeNew(keyPath, skey+"\n", 0o600); err != nil {
		return err
	}
	if err := writeNew(pubPath, vkey+"\n", 0o644); err != nil {
		os.Remove(keyPath)
		return err
	}
	fmt.Fprintf(e.stdout, "signer key   %s (keep it secret)\nverifier key %s\n%s\n", keyPath, pubPath, vkey)
	return nil
}

// writeNew creates path (it must not exist) with content and mode perm.
func writeNew(path, content string, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

func cmdCheckpoint(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("checkpoint needs a subcommand: sign\n\n%s", signingUsage)
	}
	switch args[0] {
	case "sign":
		return checkpointSign(ctx, e, args[1:])
	case "-h", "--help", "help":
		fmt.Fprint(e.stdout, signingUsage)
		return nil
	}
	return usagef("unknown checkpoint subcommand %q\n\n%s", args[0], signingUsage)
}

func checkpointSign(ctx context.Context, e *env, args []string) error {
	fl := flag.NewFlagSet("checkpoint sign", flag.ContinueOnError)
	keyPath := fl.String("key", "", "the signer key file (verity keygen's PREFIX.key)")
	origin := fl.String("origin", "", "the checkpoint's origin (default: the key's name)")
	out := fl.String("out", "", "write the checkpoint to this file (default: standard output)")
	pos, err := parseFlags(fl, args)
	if err != nil {
		return err
	}
	src, err := oneSource("checkpoint sign", pos)
	if err != nil {
		return err
	}
	if *keyPath == "" {
		return usagef("checkpoint sign needs -key FILE")
	}
	signer, err := trace.ReadSignerKeyFile(*keyPath)
	if err != nil {
		return &usageError{fmt.Sprintf("-key: %v", err)}
	}
	c := trace.Checkpoint{Origin: *origin}
	if c.Origin == "" {
		c.Origin = signer.Name()
	}
	res := verifySource(ctx, e, src, headFlag{})
	if res.Err != nil {
		return res.Err
	}
	c.Size, c.Hash = res.Head.Size, res.Head.Hash
	note, err := signer.Sign(c)
	if err != nil {
		return &usageError{fmt.Sprintf("-origin: %v", err)}
	}
	if *out == "" {
		_, err := e.stdout.Write(note)
		return err
	}
	if err := trace.WriteFileAtomic(*out, note, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "checkpoint %s: %s at %d entries, head %s\n", *out, c.Origin, c.Size, FormatHead(res.Head))
	return nil
}

// checkpointFlags are verify's -checkpoint, -pubkey and -origin.
type checkpointFlags struct {
	file, pubkey, origin string
}

func (c *checkpointFlags) add(fl *flag.FlagSet) {
	fl.StringVar(&c.file, "checkpoint", "", "a signed checkpoint (verity checkpoint sign); the log must extend it")
	fl.StringVar(&c.pubkey, "pubkey", "", "the verifier key of -checkpoint: a file (verity keygen's PREFIX.pub) or the key itself")
	fl.StringVar(&c.origin, "origin", "", "the origin -checkpoint must name (default: the key's name)")
}

// head reads and verifies the checkpoint and returns the head it signs.
// It returns ok false when no checkpoint was asked for.
func (c *checkpointFlags) head() (trace.Checkpoint, *trace.CheckpointVerifier, bool, error) {
	if c.file == "" {
		if c.pubkey != "" || c.origin != "" {
			return trace.Checkpoint{}, nil, false, usagef("-pubkey and -origin go with -checkpoint FILE")
		}
		return trace.Checkpoint{}, nil, false, nil
	}
	if c.pubkey == "" {
		return trace.Checkpoint{}, nil, false, usagef("-checkpoint needs -pubkey KEY")
	}
	v, err := readVerifierKey(c.pubkey)
	if err != nil {
		return trace.Checkpoint{}, nil, false, &usageError{fmt.Sprintf("-pubkey: %v", err)}
	}
	note, err := readInput(c.file, maxCheckpointSize)
	if err != nil {
		return trace.Checkpoint{}, nil, false, err
	}
	cp, err := v.Verify(note, c.origin)
	if err != nil {
		return trace.Checkpoint{}, nil, false, fmt.Errorf("checkpoint %s: %w", c.file, err)
	}
	return cp, v, true, nil
}

// readVerifierKey reads a verifier key file, or takes s as the key itself
// when no such file exists and s is one.
func readVerifierKey(s string) (*trace.CheckpointVerifier, error) {
	if _, err := os.Stat(s); errors.Is(err, fs.ErrNotExist) {
		if v, perr := trace.ParseVerifierKey(s); perr == nil {
			return v, nil
		}
	}
	return trace.ReadVerifierKeyFile(s)
}
