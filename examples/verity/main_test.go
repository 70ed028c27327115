package main

// Each command is run end to end, in process, against logs the library
// wrote (a file, SQLite, and PostgreSQL when VERITY_PG_DSN is set), and
// against a tampered copy for each failure exit code:
//
//	exit 0  TestVerifyFile, TestHeadAndKeptHead, TestSQLSources
//	exit 2  TestUsageErrors, TestSQLSourceNeedsTheTag
//	exit 3  TestTamperedFiles/torn_tail, TestRepair
//	exit 4  TestTamperedFiles/corrupt, TestSQLSources (a row that does not read back)
//	exit 5  TestTamperedFiles/chain_break, TestSQLSources (a changed payload)
//
// The SQL sources are compiled in with the build tag "sql" (sql.go), and
// so are their tests (sql_test.go): go test -tags sql ./examples/verity.
//	exit 6  TestHeadAndKeptHead (a cut-off log, another hash)
//	exit 7  TestTamperedFiles/not_a_log
//	exit 8  TestReplayDisagreement

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/trace"
)

// result is what one run of the command printed and returned.
type result struct {
	code           int
	stdout, stderr string
}

func verity(t testing.TB, args ...string) result {
	t.Helper()
	return verityEnv(t, &env{}, args...)
}

func verityEnv(t testing.TB, e *env, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	e.stdout, e.stderr = &out, &errOut
	code := run(context.Background(), e, args)
	return result{code, out.String(), errOut.String()}
}

func TestVerifyFile(t *testing.T) {
	path, _ := fileLog(t, 40)
	r := verity(t, "verify", path)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "result   ok")
	assert.Regexp(t, `entries  \d+ verified`, r.stdout)
	assert.Empty(t, r.stderr, "no progress bar when stderr is not a terminal")
}

// TestReadingChangesNoByte: verify, inspect, export and replay read a log
// file without writing to it; a 0-byte file is an empty log and stays 0
// bytes (opening it for writing would have written the file's magic).
func TestReadingChangesNoByte(t *testing.T) {
	path, _ := fileLog(t, 40)
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, args := range [][]string{{"verify", path}, {"inspect", path}, {"export", path, "--format", "ndjson"}, {"replay", path}} {
		r := verity(t, args...)
		require.Equal(t, exitOK, r.code, "%v: %s", args, r.stderr)
	}
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after)

	empty := filepath.Join(t.TempDir(), "empty.trace")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	r := verity(t, "verify", empty)
	require.Equal(t, exitOK, r.code, r.stderr)
	st, err := os.Stat(empty)
	require.NoError(t, err)
	assert.Zero(t, st.Size())
}

func TestProgressBarOnlyOnATerminal(t *testing.T) {
	path, _ := fileLog(t, 40)
	r := verityEnv(t, &env{tty: true}, "verify", path)
	require.Equal(t, exitOK, r.code)
	assert.Contains(t, r.stderr, "\rverifying [")
	assert.Contains(t, r.stderr, "100%")
	assert.True(t, strings.HasSuffix(r.stderr, "\r\033[K"), "the bar's line is cleared at the end")
	assert.NotContains(t, r.stdout, "verifying", "the bar goes to stderr only")
}

func TestHeadAndKeptHead(t *testing.T) {
	path, _ := fileLog(t, 40)
	head := verity(t, "head", path)
	require.Equal(t, exitOK, head.code, head.stderr)
	kept := strings.TrimSpace(head.stdout)
	h, err := ParseHead(kept)
	require.NoError(t, err)

	js := verity(t, "head", path, "--json")
	require.Equal(t, exitOK, js.code)
	var got struct {
		Entries uint64 `json:"entries"`
		Seq     uint64 `json:"seq"`
		Hash    string `json:"hash"`
		Head    string `json:"head"`
	}
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &got))
	assert.Equal(t, h.Size, got.Entries)
	assert.Equal(t, h.Size-1, got.Seq)
	assert.Equal(t, h.Hash.String(), got.Hash)
	assert.Equal(t, kept, got.Head)

	r := verity(t, "verify", path, "--head", kept)
	assert.Equal(t, exitOK, r.code, r.stdout)
	assert.Contains(t, r.stdout, "kept     "+kept+" extended")

	// An earlier head is extended too.
	o, err := open(context.Background(), Source{Path: path})
	require.NoError(t, err)
	var early string
	for e, err := range o.store.Entries(context.Background(), 5) {
		require.NoError(t, err)
		early = fmt.Sprintf("%d:%s", e.Seq, e.Hash)
		break
	}
	o.close()
	assert.Equal(t, exitOK, verity(t, "verify", path, "--head", early).code)

	// A log cut back to a shorter, valid one does not extend the head.
	short := cutCopy(t, path, h.Size-3)
	r = verity(t, "verify", short, "--head", kept)
	assert.Equal(t, exitNotExtends, r.code, r.stdout)
	assert.Contains(t, r.stdout, "NOT extended")
	assert.Contains(t, r.stdout, "does not extend the kept head")

	// Another hash at the kept position.
	other := fmt.Sprintf("%d:%064x", h.Size-1, 1)
	assert.Equal(t, exitNotExtends, verity(t, "verify", path, "--head", other).code)
}

// cutCopy copies the first n records of the log file at path.
func cutCopy(t testing.TB, path string, n uint64) string {
	t.Helper()
	off, err := recordOffset(path, n)
	require.NoError(t, err)
	dst := filepath.Join(t.TempDir(), "cut.trace")
	require.NoError(t, copyPrefix(path, dst, off))
	return dst
}

// tampered writes a copy of the log file at path changed by change.
func tampered(t testing.TB, path string, change func([]byte) []byte) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	dst := filepath.Join(t.TempDir(), "tampered.trace")
	require.NoError(t, os.WriteFile(dst, change(b), 0o600))
	return dst
}

func TestTamperedFiles(t *testing.T) {
	path, _ := fileLog(t, 40)
	rec5, err := recordOffset(path, 5)
	require.NoError(t, err)
	rec6, err := recordOffset(path, 6)
	require.NoError(t, err)
	cases := []struct {
		name    string
		change  func([]byte) []byte
		code    int
		problem string
		bad     string
	}{
		{"torn_tail", func(b []byte) []byte { return b[:len(b)-7] }, exitTornTail, "torn tail", "torn final record"},
		{"corrupt", func(b []byte) []byte { b[rec5+60] ^= 1; return b }, exitCorrupt, "corrupt", "corrupt record at entry 5"},
		{"chain_break", func(b []byte) []byte { return append(b[:rec5:rec5], b[rec6:]...) }, exitChainBreak, "chain break", "hash chain broken at entry 5"},
		{"not_a_log", func([]byte) []byte { return []byte("hello, not a log\n") }, exitNotLog, "not a log", "is not a trace log file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := tampered(t, path, c.change)
			r := verity(t, "verify", bad)
			assert.Equal(t, c.code, r.code, r.stdout+r.stderr)
			assert.Contains(t, r.stdout, "result   "+c.problem+": trace: ")
			assert.Contains(t, r.stdout, c.bad)
			// Every command reading the log fails the same way.
			for _, cmd := range [][]string{{"head", bad}, {"inspect", bad}, {"export", bad}, {"replay", bad}} {
				assert.Equal(t, c.code, verity(t, cmd...).code, cmd[0])
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	path, _ := fileLog(t, 5)
	for _, args := range [][]string{
		{}, {"frobnicate"}, {"verify"}, {"verify", path, path}, {"verify", path, "--head", "12"},
		{"verify", path, "--head", "01:" + strings.Repeat("0", 64)}, {"verify", path, "--nope"},
		{"export", path, "--format", "xml"}, {"verify", "sqlite:"}, {"verify", "sqlite:x.db#"},
		{"repair", "sqlite:x.db#log"},
	} {
		r := verity(t, args...)
		assert.Equal(t, exitUsage, r.code, "%q: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "usage: verity", "%q", args)
	}
	assert.Equal(t, exitError, verity(t, "verify", filepath.Join(t.TempDir(), "missing.trace")).code)
	_, err := os.Stat(filepath.Join(t.TempDir(), "missing.trace"))
	assert.True(t, os.IsNotExist(err), "verify never creates a log")
}

func TestRepair(t *testing.T) {
	path, _ := fileLog(t, 20)
	torn := tampered(t, path, func(b []byte) []byte { return b[:len(b)-7] })
	r := verity(t, "repair", torn)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `cut \d+ bytes of a torn final record`, r.stdout)
	side, err := filepath.Glob(torn + ".torn-*")
	require.NoError(t, err)
	assert.Len(t, side, 1, "the cut bytes are kept aside")
	assert.Equal(t, exitOK, verity(t, "verify", torn).code)
	assert.Contains(t, verity(t, "repair", torn).stdout, "nothing to repair")

	rec5, err := recordOffset(path, 5)
	require.NoError(t, err)
	corrupt := tampered(t, path, func(b []byte) []byte { b[rec5+60] ^= 1; return b })
	before, err := os.ReadFile(corrupt)
	require.NoError(t, err)
	r = verity(t, "repair", corrupt)
	assert.Equal(t, exitCorrupt, r.code, "mid-log damage is refused")
	after, err := os.ReadFile(corrupt)
	require.NoError(t, err)
	assert.Equal(t, before, after, "a refused repair leaves the file alone")
}

func TestInspect(t *testing.T) {
	path, shape := fileLog(t, 40)
	r := verity(t, "inspect", path)
	require.Equal(t, exitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	assert.Contains(t, r.stdout, "kernel.start")
	assert.Regexp(t, `kernel\.execute +executed step-0 \(exec exec-1\) cost 0\.01 → budget net 0\.01`, r.stdout)
	assert.Regexp(t, `kernel\.reject +rejected drain-all \(cost 0\.02\): invariant "non-negative" violated; suggestion: never drain below zero\n`, r.stdout, "the check is named once, without the package's prefix")
	assert.Regexp(t, `kernel\.rollback +rolled back exec exec-\d+, refund 0\.01`, r.stdout)
	assert.Regexp(t, `belief\.eliminate +ELIMINATE session incident-1 event 1: applied \[h00\]`, r.stdout)
	assert.Contains(t, r.stdout, "bundle bundle-4410: REFUSE")
	assert.Contains(t, r.stdout, "approver sre-lead APPROVED bundle bundle-4411 for agent-7 → PUBLISH", "the approver approves the actor's bundle")
	assert.Contains(t, r.stdout, "REFUSED intent")
	assert.Contains(t, r.stdout, "warned: invariant short-queue")

	kr := verity(t, "inspect", path, "--kind", "kernel.rollback")
	assert.Len(t, strings.Split(strings.TrimSpace(kr.stdout), "\n"), shape.rolledBack)
	fam := verity(t, "inspect", "--kind", "belief", path)
	assert.Len(t, strings.Split(strings.TrimSpace(fam.stdout), "\n"), shape.eliminated+1)

	rng := verity(t, "inspect", path, "--from", "3", "--to", "7")
	got := strings.Split(strings.TrimSpace(rng.stdout), "\n")
	require.Len(t, got, 5)
	assert.True(t, strings.HasPrefix(strings.TrimSpace(got[0]), "3 "), got[0])

	js := verity(t, "inspect", path, "--json")
	require.Equal(t, exitOK, js.code)
	sc := bufio.NewScanner(strings.NewReader(js.stdout))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var l inspectLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		assert.Equal(t, uint64(n), l.Seq)
		assert.NotEmpty(t, l.Summary)
		assert.True(t, json.Valid(l.Payload))
		n++
	}
	assert.Equal(t, len(lines), n)
}

// TestExport checks that what export writes is FORMAT.md's JSON form:
// anyone can read it back with trace.Entry's JSON decoding and verify it.
func TestExport(t *testing.T) {
	path, _ := fileLog(t, 40)
	headText := strings.TrimSpace(verity(t, "head", path).stdout)
	want, err := ParseHead(headText)
	require.NoError(t, err)

	r := verity(t, "export", path, "--format", "json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var entries []trace.Entry
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &entries))
	h, err := trace.Verify(entries)
	require.NoError(t, err)
	assert.Equal(t, want, h)

	r = verity(t, "export", path, "--format", "ndjson")
	require.Equal(t, exitOK, r.code)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Len(t, lines, len(entries))
	for i, l := range lines {
		var e trace.Entry
		require.NoError(t, json.Unmarshal([]byte(l), &e))
		assert.Equal(t, entries[i].Hash, e.Hash)
		b, err := entries[i].MarshalJSON()
		require.NoError(t, err)
		assert.Equal(t, string(b), l, "each line is the entry's canonical JSON form")
	}
}

func TestReplay(t *testing.T) {
	path, shape := fileLog(t, 60)
	r := verity(t, "replay", path)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "kernel session oncall-7")
	assert.Regexp(t, `meter .*`, r.stdout)
	assert.Contains(t, r.stdout, fmt.Sprintf("belief session incident-1: %d events, %d survivors", shape.eliminated+1, 50-shape.eliminated))
	assert.Contains(t, r.stdout, "claims bundle bundle-4410 (entry ")
	assert.Regexp(t, `claims bundle bundle-4411 \(entry \d+\): PUBLISH`, r.stdout)
	assert.Contains(t, r.stdout, "approval sre-lead APPROVED at ")
	assert.Contains(t, r.stdout, "refused entry ")
}

// rewrite copies the log at path into a new, validly chained log file,
// passing each payload through change: the copy verifies, and says what
// change made it say.
func rewrite(t testing.TB, path string, change func(trace.Entry) []byte) string {
	t.Helper()
	ctx := context.Background()
	o, err := open(ctx, Source{Path: path})
	require.NoError(t, err)
	defer o.close()
	dst := filepath.Join(t.TempDir(), "rewritten.trace")
	st, err := trace.OpenFile(dst, trace.FileOptions{Sync: trace.SyncManual})
	require.NoError(t, err)
	log, err := trace.NewLog(st)
	require.NoError(t, err)
	for e, err := range o.store.Entries(ctx, 0) {
		require.NoError(t, err)
		_, err = log.Append(ctx, e.Kind, change(e), trace.At(e.Time))
		require.NoError(t, err)
	}
	require.NoError(t, log.Close())
	return dst
}

func TestReplayDisagreement(t *testing.T) {
	path, _ := fileLog(t, 30)
	same := rewrite(t, path, func(e trace.Entry) []byte { return e.Payload })
	require.Equal(t, exitOK, verity(t, "replay", same).code)

	changed := false
	forged := rewrite(t, path, func(e trace.Entry) []byte {
		if e.Kind == "kernel.execute" && !changed {
			changed = true
			return bytes.Replace(e.Payload, []byte(`"steps":1,`), []byte(`"steps":2,`), 1)
		}
		return e.Payload
	})
	require.True(t, changed)
	require.Equal(t, exitOK, verity(t, "verify", forged).code, "the forged log is validly chained")
	r := verity(t, "replay", forged)
	assert.Equal(t, exitReplay, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "kernel: ")
	assert.Contains(t, r.stderr, "steps")

	forgedBelief := rewrite(t, path, func(e trace.Entry) []byte {
		if e.Kind == "belief.eliminate" {
			return bytes.Replace(e.Payload, []byte(`"h00"`), []byte(`"h01"`), 1)
		}
		return e.Payload
	})
	r = verity(t, "replay", forgedBelief)
	assert.Equal(t, exitReplay, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "belief: ")
}
