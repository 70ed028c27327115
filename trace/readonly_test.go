package trace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenFileReadOnlyChangesNothing: a read-only open verifies the log as
// OpenFile does but leaves every byte and the file's mode alone: a 0-byte
// file stays 0 bytes, a missing file is not created, a read-only file can
// be opened, and Append refuses.
func TestOpenFileReadOnlyChangesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	path := filepath.Join(dir, "a.trace")
	f, err := OpenFile(path, FileOptions{})
	require.NoError(t, err)
	l, err := NewLog(f)
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, err = l.Append(ctx, "test.ro", []byte(`{"i":1}`))
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())
	require.NoError(t, os.Chmod(path, 0o400))
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	ro, err := OpenFileReadOnly(path)
	require.NoError(t, err)
	h, err := VerifyStore(ctx, ro)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), h.Size)
	last, _, _ := entryAt(t, ro, 2)
	err = ro.Append(ctx, Entry{Seq: 3, Prev: last.Hash, Kind: "test.ro", Payload: []byte(`{}`), Time: last.Time})
	assert.ErrorIs(t, err, ErrReadOnly)
	require.NoError(t, ro.Close())
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after)

	empty := filepath.Join(dir, "empty.trace")
	require.NoError(t, os.WriteFile(empty, nil, 0o400))
	ro, err = OpenFileReadOnly(empty)
	require.NoError(t, err)
	h, err = ro.Head(ctx)
	require.NoError(t, err)
	assert.Equal(t, Head{}, h, "a 0-byte file is an empty log")
	require.NoError(t, ro.Close())
	st, err := os.Stat(empty)
	require.NoError(t, err)
	assert.Zero(t, st.Size(), "and stays 0 bytes")

	_, err = OpenFileReadOnly(filepath.Join(dir, "missing.trace"))
	assert.True(t, errors.Is(err, os.ErrNotExist), "a missing file is an error, not created: %v", err)
	_, statErr := os.Stat(filepath.Join(dir, "missing.trace"))
	assert.True(t, os.IsNotExist(statErr))
}

func entryAt(t *testing.T, s Store, seq uint64) (Entry, bool, error) {
	t.Helper()
	for e, err := range s.Entries(context.Background(), seq) {
		require.NoError(t, err)
		return e, true, nil
	}
	return Entry{}, false, nil
}
