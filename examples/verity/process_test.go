package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// verityBinary builds this command into a directory of t's, for the
// tests that run verity as an operator does: as a process, its exit
// status read by the shell.
func verityBinary(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "verity")
	cmd := exec.Command("go", "build", "-o", path, ".")
	var out bytes.Buffer
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build: %v: %s", err, out.String())
	}
	return path
}

// verityProcess runs the built command bin with args, killed after limit;
// code is -1 if it had to be killed.
func verityProcess(t testing.TB, bin string, limit time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		code = -1
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return result{code, out.String(), errOut.String()}
}
