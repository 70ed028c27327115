// Command tracedemo shows Verity's hash-chained log end to end: it appends
// a few entries to a file log, reopens and verifies it, then changes one
// byte of a copy of the file and shows how the damage is reported.
//
//	go run ./examples/tracedemo                  # the log in a temporary directory, removed
//	go run ./examples/tracedemo -log agent.trace # the intact log kept in a new file
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/verity-go/verity/trace"
)

func main() {
	keep := flag.String("log", "", "keep the intact log in this new `file` (default: a temporary file, removed at the end)")
	flag.Parse()
	if err := run(os.Stdout, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "tracedemo:", err)
		os.Exit(1)
	}
}

// run writes the log to keep, a new file, or (if keep is empty) to a
// temporary file; the tampering is done on a temporary copy.
func run(w io.Writer, keep string) error {
	ctx := context.Background()
	if keep != "" {
		if _, err := os.Lstat(keep); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("-log %s: the demonstration writes a new log; give a path where no file is", keep)
		}
	}
	dir, err := os.MkdirTemp("", "verity-tracedemo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := keep
	if path == "" {
		path = filepath.Join(dir, "agent.trace")
	}

	store, err := trace.OpenFile(path, trace.FileOptions{})
	if err != nil {
		return err
	}
	log, err := trace.NewLog(store)
	if err != nil {
		return err
	}
	steps := []struct {
		kind    string
		payload any
	}{
		{"agent.plan", map[string]any{"goal": "rotate the API key", "steps": 2}},
		{"agent.tool_call", map[string]any{"action": "create-key", "cost_units": 1000}},
		{"agent.tool_call", map[string]any{"action": "revoke-old-key", "cost_units": 500}},
		{"agent.report", map[string]any{"decision": "PUBLISH", "claims": 3}},
	}
	for _, s := range steps {
		e, err := log.AppendValue(ctx, s.kind, s.payload)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "appended #%d %-16s %s  hash %s…\n", e.Seq, e.Kind, e.Payload, e.Hash.String()[:16])
	}
	head := log.Head()
	if err := log.Close(); err != nil {
		return err
	}
	fmt.Fprintf(w, "kept head: size %d, hash %s…\n", head.Size, head.Hash.String()[:16])

	// Reopen: the whole chain is verified on open, and against the head we kept.
	store, err = trace.OpenFile(path, trace.FileOptions{})
	if err != nil {
		return err
	}
	log, err = trace.NewLog(store)
	if err != nil {
		return err
	}
	if _, err := log.VerifyAgainst(ctx, head); err != nil {
		return fmt.Errorf("fresh log does not verify: %w", err)
	}
	fmt.Fprintln(w, "reopened: chain verified against the kept head")
	if err := log.Close(); err != nil {
		return err
	}

	// Tamper with a copy: change one byte inside the second entry's
	// payload ("create" → "crEate").
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	intact := path
	path = filepath.Join(dir, "tampered.trace")
	at := bytes.Index(raw, []byte("create-key"))
	if at < 0 {
		return errors.New("payload not found in file")
	}
	raw[at+2] = 'E'
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(w, "tampered: byte %d of %s changed\n", at+2, filepath.Base(path))

	_, err = trace.OpenFile(path, trace.FileOptions{})
	var corrupt *trace.CorruptRecordError
	switch {
	case errors.As(err, &corrupt):
		fmt.Fprintf(w, "detected: entry %d at offset %d: %s\n", corrupt.Index, corrupt.Offset, corrupt.Reason)
	case err != nil:
		fmt.Fprintf(w, "detected: %v\n", err)
	default:
		return errors.New("tampering was not detected")
	}
	if keep != "" {
		fmt.Fprintf(w, "the intact log is kept in %s\n", intact)
	}
	return nil
}
