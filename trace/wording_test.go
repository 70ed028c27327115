package trace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDamagedFileSaysItOnce: the error for a changed byte in a record says
// "trace: " and "corrupt record" once each, and still matches ErrCorrupt.
func TestDamagedFileSaysItOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log") // a name without "trace: " in the message
	f, err := OpenFile(path, FileOptions{})
	require.NoError(t, err)
	log, err := NewLog(f)
	require.NoError(t, err)
	for range 3 {
		_, err := log.AppendValue(context.Background(), "test.step", map[string]any{"n": "payload"})
		require.NoError(t, err)
	}
	require.NoError(t, log.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[strings.Index(string(b), "payload")] ^= 1 // the first entry's payload
	require.NoError(t, os.WriteFile(path, b, 0o600))

	_, err = OpenFileReadOnly(path)
	var ce *CorruptRecordError
	require.ErrorAs(t, err, &ce)
	require.ErrorIs(t, err, ErrCorrupt)
	msg := err.Error()
	for _, once := range []string{"trace: ", "corrupt record"} {
		if n := strings.Count(msg, once); n != 1 {
			t.Errorf("%q appears %d times in %q", once, n, msg)
		}
	}
	require.True(t, strings.HasPrefix(ce.Reason, "hash mismatch"), ce.Reason)
	require.False(t, errors.Is(err, ErrTornTail))
}
