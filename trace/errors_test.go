package trace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestErrorsPrefixedOnce walks the package's error-producing paths (parsing,
// field rules, appends, conflicts, closed stores, every way a log file can
// fail to open, verification, JSON) and checks that each message starts
// with "trace: " and says it only once, however many layers wrapped it.
func TestErrorsPrefixedOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var errs []error
	add := func(err error) {
		t.Helper()
		require.Error(t, err)
		errs = append(errs, err)
	}
	second := func(_ any, err error) error { return err }
	third := func(_, _ any, err error) error { return err }

	add(second(ParseHash("00")))
	add(second(ParseHash(strings.Repeat("A", 64))))
	add(second(ParseTime("2026-01-01T00:00:00Z")))
	add(second(ParseTime("2026-02-30T00:00:00.000000000Z")))
	add(ValidPayload(nil))
	add(ValidPayload([]byte(`{ }`)))
	add(ValidPayload(make([]byte, MaxPayloadLen+1)))
	add(ValidFields(Entry{Kind: "Bad", Payload: []byte(`{}`)}))
	add(ValidFields(Entry{Kind: "a.", Payload: []byte(`{}`)}))
	add(ValidFields(Entry{Kind: "a", Payload: []byte(`{}`), Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}))
	add(third(Next(Head{}, "a", []byte(`{"a":`), t0)))

	l, err := NewLog(NewMemory())
	require.NoError(t, err)
	add(second(l.Append(ctx, "a", []byte(`{`))))
	add(second(l.AppendValue(ctx, "a", make(chan int))))
	add(second(l.Append(ctx, "a", []byte(`{}`), After(Head{Size: 9}))))
	add(second(l.Append(ctx, "A", []byte(`{}`))))
	e, _, err := Next(Head{}, "a", []byte(`{}`), t0)
	require.NoError(t, err)
	add(l.Store().Append(ctx, e, e))
	require.NoError(t, l.Store().Close())
	add(l.Store().Close())
	add(second(l.Append(ctx, "a", []byte(`{}`))))

	chain := buildChain(t, 3)
	forged := append([]Entry(nil), chain...)
	forged[1].Kind = "forged"
	add(second(Verify(forged)))
	add(second(VerifyAgainst(chain[:2], Head{Size: 3, Hash: chain[2].Hash})))
	var back Entry
	add(json.Unmarshal([]byte(`{"seq":0}`), &back))
	add(json.Unmarshal([]byte(`{"seq":0,"prev":"`+Genesis.String()+`","kind":"a","payload":{ },"time":"x","hash":"`+Genesis.String()+`"}`), &back))
	add(second(Entry{Kind: "a"}.MarshalJSON()))
	big := chain[0]
	big.Seq = 1 << 60
	add(second(big.MarshalJSON()))

	// Log files: missing directory, not a log, torn, corrupt, repair of a
	// missing file, a field the format cannot hold, a closed file.
	add(second(OpenFile(filepath.Join(dir, "no", "such", "dir", "log"), FileOptions{})))
	notLog := filepath.Join(dir, "notlog")
	require.NoError(t, os.WriteFile(notLog, []byte("hello, world\n"), 0o600))
	add(second(OpenFile(notLog, FileOptions{})))
	path := filepath.Join(dir, "log")
	f, err := OpenFile(path, FileOptions{})
	require.NoError(t, err)
	require.NoError(t, f.Append(ctx, chain...))
	add(f.Append(ctx, Entry{Seq: 3, Prev: chain[2].Hash, Kind: "a", Payload: []byte(`{ }`)}))
	require.NoError(t, f.Close())
	add(f.Close())
	add(f.Append(ctx, chain[0]))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	torn := filepath.Join(dir, "torn")
	require.NoError(t, os.WriteFile(torn, raw[:len(raw)-3], 0o600))
	add(second(OpenFile(torn, FileOptions{})))
	corrupt := filepath.Join(dir, "corrupt")
	flipped := append([]byte(nil), raw...)
	flipped[len(fileMagic)+frameHeaderLen+60] ^= 1 // inside entry 0's kind
	require.NoError(t, os.WriteFile(corrupt, flipped, 0o600))
	add(second(OpenFile(corrupt, FileOptions{})))
	add(second(RepairFile(filepath.Join(dir, "missing"))))

	for _, err := range errs {
		msg := err.Error()
		require.True(t, strings.HasPrefix(msg, "trace: "), "no prefix: %s", msg)
		require.Equal(t, 1, strings.Count(msg, "trace: "), "prefix repeated: %s", msg)
	}
}
