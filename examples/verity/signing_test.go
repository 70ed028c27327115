package main

// Signed checkpoints end to end: keygen, checkpoint sign, verify
// -checkpoint, and each exit status (0 the same or an extended log, 6 a
// rewritten or cut-off log, 9 a checkpoint that does not verify, 2 a
// usage or key file mistake, 1 keygen refusing to overwrite).

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/trace"
)

// keygen runs verity keygen and returns the key file paths.
func keygen(t *testing.T, name string) (key, pub string) {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "k")
	r := verity(t, "keygen", "-name", name, "-out", prefix)
	require.Equal(t, exitOK, r.code, r.stderr)
	return prefix + ".key", prefix + ".pub"
}

// logEntries reads every entry of a log file.
func logEntries(t *testing.T, path string) []trace.Entry {
	t.Helper()
	st, err := trace.OpenFileReadOnly(path)
	require.NoError(t, err)
	defer st.Close()
	var out []trace.Entry
	for e, err := range st.Entries(context.Background(), 0) {
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

// writeEntries replaces the log file at path with entries.
func writeEntries(t *testing.T, path string, entries []trace.Entry) {
	t.Helper()
	tmp := path + ".new"
	st, err := trace.OpenFile(tmp, trace.FileOptions{})
	require.NoError(t, err)
	require.NoError(t, st.Append(context.Background(), entries...))
	require.NoError(t, st.Close())
	require.NoError(t, os.Rename(tmp, path))
}

// rewriteEntry rebuilds the log at path with entry victim's payload changed
// and every hash after it recomputed: a consistent chain, which verify
// alone accepts.
func rewriteEntry(t *testing.T, path string, victim int) {
	t.Helper()
	var head trace.Head
	var out []trace.Entry
	for i, e := range logEntries(t, path) {
		payload := e.Payload
		if i == victim {
			payload = []byte(`{"rewritten":true}`)
		}
		ne, nh, err := trace.Next(head, e.Kind, payload, e.Time)
		require.NoError(t, err)
		out, head = append(out, ne), nh
	}
	writeEntries(t, path, out)
}

func TestKeygen(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "audit")
	r := verity(t, "keygen", "-name", "example.com/agent-7", "-out", prefix)
	require.Equal(t, exitOK, r.code, r.stderr)
	fi, err := os.Stat(prefix + ".key")
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	s, err := trace.ReadSignerKeyFile(prefix + ".key")
	require.NoError(t, err)
	v, err := trace.ReadVerifierKeyFile(prefix + ".pub")
	require.NoError(t, err)
	assert.Equal(t, "example.com/agent-7", v.Name())
	assert.Equal(t, s.Verifier().String(), v.String())
	assert.Contains(t, r.stdout, v.String())

	before, err := os.ReadFile(prefix + ".key")
	require.NoError(t, err)
	r = verity(t, "keygen", "-name", "other", "-out", prefix)
	assert.Equal(t, exitError, r.code, "an existing key is never overwritten")
	assert.Contains(t, r.stderr, "never overwrites")
	after, err := os.ReadFile(prefix + ".key")
	require.NoError(t, err)
	assert.Equal(t, before, after)

	for _, args := range [][]string{
		{"keygen"},
		{"keygen", "-name", "x"},
		{"keygen", "-out", prefix + "2"},
		{"keygen", "-name", "a b", "-out", prefix + "3"},
		{"keygen", "-name", "a+b", "-out", prefix + "4"},
		{"keygen", "-name", "x", "-out", prefix + "5", "extra"},
		{"checkpoint"},
		{"checkpoint", "frobnicate"},
	} {
		r := verity(t, args...)
		assert.Equal(t, exitUsage, r.code, "%q: %s", args, r.stderr)
	}
}

func TestVerifyCheckpoint(t *testing.T) {
	path, _ := fileLog(t, 12)
	key, pub := keygen(t, "example.com/agent-7")
	dir := t.TempDir()
	cp := filepath.Join(dir, "agent.checkpoint")

	r := verity(t, "checkpoint", "sign", path, "-key", key, "-out", cp)
	require.Equal(t, exitOK, r.code, r.stderr)
	note, err := os.ReadFile(cp)
	require.NoError(t, err)
	lines := strings.Split(string(note), "\n")
	require.Len(t, lines, 6, "%q", note)
	entries := logEntries(t, path)
	assert.Equal(t, "example.com/agent-7", lines[0])
	assert.Equal(t, strconv.Itoa(len(entries)), lines[1])
	assert.Equal(t, base64.StdEncoding.EncodeToString(entries[len(entries)-1].Hash[:]), lines[2])
	assert.Equal(t, "", lines[3])
	assert.True(t, strings.HasPrefix(lines[4], "— example.com/agent-7 "))

	// to standard output, the same bytes (Ed25519 is deterministic)
	r = verity(t, "checkpoint", "sign", path, "-key", key)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, string(note), r.stdout)

	verify := func(args ...string) result {
		t.Helper()
		return verity(t, append([]string{"verify", path, "-checkpoint", cp, "-pubkey", pub}, args...)...)
	}
	r = verify()
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "signed by example.com/agent-7+")
	assert.Contains(t, r.stdout, "extended")

	t.Run("KeyGivenAsText", func(t *testing.T) {
		b, err := os.ReadFile(pub)
		require.NoError(t, err)
		r := verity(t, "verify", path, "-checkpoint", cp, "-pubkey", strings.TrimSpace(string(b)))
		assert.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	})

	t.Run("WrongKey", func(t *testing.T) {
		_, otherPub := keygen(t, "example.com/agent-7")
		r := verity(t, "verify", path, "-checkpoint", cp, "-pubkey", otherPub)
		assert.Equal(t, exitCheckpoint, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stdout, "checkpoint does not verify")
	})
	t.Run("BadSignature", func(t *testing.T) {
		bad := bytes.Clone(note)
		bad[len(bad)-10] ^= 0x01 // inside the base64 of the signature
		if bad[len(bad)-10] == '=' || bad[len(bad)-10] == '\n' {
			t.Fatal("flipped outside the signature")
		}
		p := filepath.Join(t.TempDir(), "bad.checkpoint")
		require.NoError(t, os.WriteFile(p, bad, 0o644))
		r := verity(t, "verify", path, "-checkpoint", p, "-pubkey", pub)
		assert.Equal(t, exitCheckpoint, r.code, r.stdout+r.stderr)
	})
	t.Run("ChangedSize", func(t *testing.T) {
		bad := bytes.Replace(note, []byte("\n"+lines[1]+"\n"), []byte("\n1\n"), 1)
		p := filepath.Join(t.TempDir(), "bad.checkpoint")
		require.NoError(t, os.WriteFile(p, bad, 0o644))
		r := verity(t, "verify", path, "-checkpoint", p, "-pubkey", pub)
		assert.Equal(t, exitCheckpoint, r.code, r.stdout+r.stderr)
	})
	t.Run("OtherOrigin", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "other.checkpoint")
		r := verity(t, "checkpoint", "sign", path, "-key", key, "-origin", "example.com/agent-8", "-out", p)
		require.Equal(t, exitOK, r.code, r.stderr)
		r = verity(t, "verify", path, "-checkpoint", p, "-pubkey", pub)
		assert.Equal(t, exitCheckpoint, r.code, "the origin defaults to the key's name")
		assert.Contains(t, r.stderr, "another origin")
		r = verity(t, "verify", path, "-checkpoint", p, "-pubkey", pub, "-origin", "example.com/agent-7")
		assert.Equal(t, exitCheckpoint, r.code)
		r = verity(t, "verify", path, "-checkpoint", p, "-pubkey", pub, "-origin", "example.com/agent-8")
		assert.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	})
	t.Run("UsageAndKeyFiles", func(t *testing.T) {
		garbage := filepath.Join(t.TempDir(), "garbage.pub")
		require.NoError(t, os.WriteFile(garbage, []byte("not a key\n"), 0o644))
		open := filepath.Join(t.TempDir(), "open.key")
		b, err := os.ReadFile(key)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(open, b, 0o644))
		for _, args := range [][]string{
			{"verify", path, "-checkpoint", cp},
			{"verify", path, "-pubkey", pub},
			{"verify", path, "-checkpoint", cp, "-pubkey", pub, "--head", "0:" + entries[0].Hash.String()},
			{"verify", path, "-checkpoint", cp, "-pubkey", garbage},
			{"verify", path, "-checkpoint", cp, "-pubkey", key},
			{"checkpoint", "sign", path},
			{"checkpoint", "sign", path, "-key", pub},
			{"checkpoint", "sign", path, "-key", open},
			{"checkpoint", "sign", path, "-key", key, "-origin", "two words"},
			{"checkpoint", "sign", "-key", key},
		} {
			r := verity(t, args...)
			assert.Equal(t, exitUsage, r.code, "%q: %s", args, r.stderr)
		}
		r := verity(t, "verify", path, "-checkpoint", cp, "-pubkey", garbage)
		assert.Contains(t, r.stderr, "malformed key")
		r = verity(t, "checkpoint", "sign", path, "-key", open)
		assert.Contains(t, r.stderr, "chmod 600")
		r = verity(t, "verify", path, "-checkpoint", filepath.Join(dir, "missing"), "-pubkey", pub)
		assert.Equal(t, exitError, r.code)
	})

	// Extended: more entries after the signed head still pass.
	st, err := trace.OpenFile(path, trace.FileOptions{})
	require.NoError(t, err)
	log, err := trace.NewLog(st)
	require.NoError(t, err)
	for range 3 {
		_, err := log.Append(context.Background(), "test.more", []byte(`{"more":1}`), trace.At(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)))
		require.NoError(t, err)
	}
	require.NoError(t, log.Close())
	r = verify()
	assert.Equal(t, exitOK, r.code, "an extended log: %s", r.stdout+r.stderr)

	// Rewritten: any entry up to the checkpoint's size changed with every
	// hash recomputed verifies on its own but not against the checkpoint.
	extended := logEntries(t, path)
	for _, victim := range []int{0, len(entries) / 2, len(entries) - 1} {
		writeEntries(t, path, extended)
		require.Equal(t, exitOK, verity(t, "verify", path).code)
		rewriteEntry(t, path, victim)
		r := verity(t, "verify", path)
		require.Equal(t, exitOK, r.code, "the rewritten chain is consistent: %s", r.stdout)
		r = verify()
		assert.Equal(t, exitNotExtends, r.code, "entry %d rewritten: %s", victim, r.stdout+r.stderr)
		assert.Contains(t, r.stdout, "NOT extended")
	}
	// A rewrite after the checkpoint's size is not the checkpoint's to see.
	writeEntries(t, path, extended)
	rewriteEntry(t, path, len(entries))
	assert.Equal(t, exitOK, verify().code)

	// Cut short below the checkpoint.
	writeEntries(t, path, entries[:len(entries)-1])
	assert.Equal(t, exitNotExtends, verify().code)
}
