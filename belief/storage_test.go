// The Storage conformance suite (belief/storagetest) over the storages of
// this package: two servers over one store stay consistent, a restart
// replays every session. belief/sqlstorage runs it for SQL.
//
//   - MemoryStorage: TestMemoryStorageConformance.
//   - FileStorage, restart included: TestFileStorageConformance.

package belief_test

import (
	"context"

	"testing"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/belief/storagetest"
	"github.com/verity-go/verity/trace"
)

// TestMemoryStorageConformance: two Servers over one MemoryStorage behave
// like two processes over a shared database, so reopen hands out the same
// storage.
func TestMemoryStorageConformance(t *testing.T) {
	storagetest.Run(t,
		func(t *testing.T) belief.Storage { return belief.NewMemoryStorage() },
		func(_ *testing.T, st belief.Storage) belief.Storage { return st })
}

// TestFileStorageConformance: a FileStorage is single-process (reopen is
// nil), so the suite restarts a Server over the same directory and skips
// two servers at once.
func TestFileStorageConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) belief.Storage {
		fs, err := belief.NewFileStorage(t.TempDir(), trace.FileOptions{})
		require.NoError(t, err)
		return fs
	}, nil)
}

// BenchmarkServerStartFile: a Server over a FileStorage holding 10,000
// sessions of 100 events each starts and answers its first request
// (storagetest.BenchmarkStart: start-ms, first-ms). Building the fixture
// takes a while; it is built once.
func BenchmarkServerStartFile(b *testing.B) {
	fs, err := belief.NewFileStorage(b.TempDir(), trace.FileOptions{Sync: trace.SyncManual})
	require.NoError(b, err)
	ids, err := storagetest.Fill(context.Background(), fs, 10_000, 100)
	require.NoError(b, err)
	storagetest.BenchmarkStart(b, fs, ids)
}
