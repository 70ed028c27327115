// The Storage conformance suite (belief/storagetest) over the storages of
// this package: two servers over one store stay consistent, a restart
// replays every session. belief/sqlstorage runs it for SQL.
//
//   - MemoryStorage: TestMemoryStorageConformance.
//   - FileStorage, restart included: TestFileStorageConformance.
//   - FileStorage, a process killed during concurrent eliminations loses
//     nothing it acknowledged and leaves logs that verify:
//     TestKillDuringEliminations.

package belief_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

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

// TestHelperKillWorkload is not a test on its own: TestKillDuringEliminations
// runs the test binary again, and the process lands here.
func TestHelperKillWorkload(t *testing.T) {
	dir := os.Getenv("VERITY_BELIEF_KILL_DIR")
	if dir == "" {
		t.Skip("helper process for TestKillDuringEliminations")
	}
	ctx := context.Background()
	fs, err := belief.NewFileStorage(dir, trace.FileOptions{})
	require.NoError(t, err)
	srv, err := belief.NewServer(ctx, fs, storagetest.KillOptions...)
	require.NoError(t, err)
	require.NoError(t, storagetest.Workload(ctx, srv, fs, storagetest.Ack()))
}

// TestKillDuringEliminations: a process eliminating from several
// goroutines over sessions in a FileStorage (fsync per append) is killed
// with SIGKILL at a random moment, trial after trial on the same
// directory; after each, torn final records are cut off (trace.RepairFile,
// what an operator runs after a crash; an append cut short was never
// acknowledged) and a restarted Server finds every acknowledged event, and
// every session verifies in full (storagetest.CheckAcks).
func TestKillDuringEliminations(t *testing.T) {
	trials := 12
	if testing.Short() {
		trials = 4
	}
	dir := t.TempDir()
	checked, repaired := 0, 0
	for range trials {
		acks := storagetest.Kill(t, "TestHelperKillWorkload", []string{"VERITY_BELIEF_KILL_DIR=" + dir},
			time.Duration(20+rand.IntN(200))*time.Millisecond)
		paths, err := filepath.Glob(filepath.Join(dir, "*.trace"))
		require.NoError(t, err)
		for _, p := range paths {
			f, err := trace.OpenFile(p, trace.FileOptions{})
			if errors.Is(err, trace.ErrTornTail) {
				_, err = trace.RepairFile(p)
				repaired++
			} else if err == nil {
				err = f.Close()
			}
			require.NoError(t, err)
		}
		fs, err := belief.NewFileStorage(dir, trace.FileOptions{})
		require.NoError(t, err)
		checked += storagetest.CheckAcks(t, fs, acks)
		require.NoError(t, fs.Close()) // the next trial's process locks the directory
	}
	t.Logf("%d trials, %d acknowledged events checked, %d torn tails repaired", trials, checked, repaired)
}
