package trace

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// waitUntil spins (yielding, no sleeping) until cond holds or a generous
// deadline passes.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		runtime.Gosched()
	}
}

// TestGroupCommitSharesOneFsync: while one appender's fsync runs, ten
// more appenders write their records; when it ends, a single fsync makes
// all ten durable. Every append returns only once its record is durable,
// and OnSync reports each fsync with the records it covered.
func TestGroupCommitSharesOneFsync(t *testing.T) {
	fs := newFaultFS()
	var mu sync.Mutex
	var stats []SyncStat
	s, err := OpenFile("log", FileOptions{fs: fs, Sync: SyncGroup, OnSync: func(st SyncStat) {
		mu.Lock()
		stats = append(stats, st)
		mu.Unlock()
	}})
	require.NoError(t, err)
	defer s.Close()
	l, err := NewLog(s)
	require.NoError(t, err)

	entered, release := make(chan struct{}), make(chan struct{})
	var released sync.Once
	defer released.Do(func() { close(release) }) // before Close, which waits for the fsync
	var once sync.Once
	fs.mu.Lock()
	fs.beforeSync = func() {
		first := false
		once.Do(func() { first = true })
		if first {
			close(entered)
			<-release
		}
	}
	fs.mu.Unlock()

	ctx := context.Background()
	errs := make(chan error, 11)
	go func() { _, err := l.Append(ctx, "a.b", []byte(`{"n":0}`)); errs <- err }()
	<-entered // the first appender leads and is inside its fsync
	for i := 1; i <= 10; i++ {
		go func() { _, err := l.Append(ctx, "a.b", []byte(fmt.Sprintf(`{"n":%d}`, i))); errs <- err }()
	}
	waitUntil(t, "ten more records are written", func() bool { return l.Head().Size == 11 })
	select {
	case err := <-errs:
		t.Fatalf("an append returned before its fsync: %v", err)
	default:
	}
	released.Do(func() { close(release) })
	for range 11 {
		require.NoError(t, <-errs)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, stats, 2, "one fsync for the first record, one for the ten written during it")
	assert.Equal(t, 1, stats[0].Records)
	assert.Equal(t, 10, stats[1].Records)
	for _, st := range stats {
		assert.NoError(t, st.Err)
	}
	assert.Equal(t, fs.bytes("log"), fs.image("log", 0), "everything acknowledged is durable")
}

// TestDeferDurabilityWaitsAfterTheLock: appends under DeferDurability
// return once written; the records are durable only after Wait, which
// returns the failure of the fsync that was to make them so.
func TestDeferDurabilityWaitsAfterTheLock(t *testing.T) {
	fs := newFaultFS()
	s, err := OpenFile("log", FileOptions{fs: fs, Sync: SyncGroup})
	require.NoError(t, err)
	defer s.Close()
	l, err := NewLog(s)
	require.NoError(t, err)
	dctx, d := DeferDurability(context.Background())
	before := len(fs.image("log", 0))
	for i := range 3 {
		_, err := l.Append(dctx, "a.b", []byte(fmt.Sprintf(`{"n":%d}`, i)))
		require.NoError(t, err)
	}
	assert.Len(t, fs.image("log", 0), before, "nothing synced before Wait")
	require.NoError(t, d.Wait())
	assert.Equal(t, fs.bytes("log"), fs.image("log", 0), "durable after Wait")
	require.NoError(t, d.Wait(), "nothing left to wait for")

	_, err = l.Append(dctx, "a.b", []byte(`{"n":3}`))
	require.NoError(t, err)
	fs.mu.Lock()
	fs.failSyncs = 1
	fs.mu.Unlock()
	assert.ErrorIs(t, d.Wait(), ErrBroken)
	_, err = l.Append(dctx, "a.b", []byte(`{"n":4}`))
	assert.ErrorIs(t, err, ErrBroken, "a broken store takes no more appends")
}

// TestDeferDurabilityChangesNothingWhenDurable: under stores that are
// durable when Append returns, the context changes nothing.
func TestDeferDurabilityChangesNothingWhenDurable(t *testing.T) {
	fs := newFaultFS()
	s, err := OpenFile("log", FileOptions{fs: fs})
	require.NoError(t, err)
	defer s.Close()
	for _, st := range []Store{s, NewMemory()} {
		l, err := NewLog(st)
		require.NoError(t, err)
		dctx, d := DeferDurability(context.Background())
		_, err = l.Append(dctx, "a.b", []byte(`{}`))
		require.NoError(t, err)
		assert.Empty(t, d.waits, "%T: nothing to wait for", st)
		require.NoError(t, d.Wait())
	}
	assert.Equal(t, fs.bytes("log"), fs.image("log", 0))
}

// TestOnSyncReportsFailures: a failed fsync is reported with its error
// under every policy that syncs.
func TestOnSyncReportsFailures(t *testing.T) {
	for _, pol := range []SyncPolicy{SyncEveryAppend, SyncGroup, SyncManual} {
		fs := newFaultFS()
		var got []SyncStat
		s, err := OpenFile("log", FileOptions{fs: fs, Sync: pol, OnSync: func(st SyncStat) { got = append(got, st) }})
		require.NoError(t, err)
		es := buildChain(t, 2)
		require.NoError(t, s.Append(context.Background(), es[0]))
		require.NoError(t, s.Sync())
		fs.failSyncs = 1
		err = s.Append(context.Background(), es[1])
		if pol == SyncManual {
			require.NoError(t, err)
			err = s.Sync()
		}
		require.ErrorIs(t, err, ErrBroken, "policy %d", pol)
		require.Len(t, got, 2, "policy %d: %v", pol, got)
		assert.Equal(t, 1, got[0].Records)
		assert.NoError(t, got[0].Err)
		assert.Equal(t, 0, got[1].Records)
		assert.ErrorIs(t, got[1].Err, errInjected)
		_ = s.Close()
	}
}

// TestGroupCommitKeepsEveryAcknowledgedEntry: concurrent appenders, some
// waiting for durability after the append (DeferDurability), a machine
// crash at any moment (only synced bytes and a torn piece of the rest
// survive): the reopened log holds every entry acknowledged before the
// crash, in order, and verifies.
//
// The log is over the File itself or over a CheckpointStore wrapping it,
// which keeps its group commit.
func TestGroupCommitKeepsEveryAcknowledgedEntry(t *testing.T) {
	signer := testSigner(t, "example.com/log", 1)
	dir := t.TempDir()
	rapid.Check(t, func(rt *rapid.T) {
		fs := newFaultFS()
		f, err := OpenFile("log", FileOptions{fs: fs, Sync: SyncGroup})
		if err != nil {
			rt.Fatal(err)
		}
		var s Store = f
		if rapid.Bool().Draw(rt, "checkpointed") {
			s, err = NewCheckpointStore(context.Background(), f, CheckpointOptions{Signer: signer, Path: filepath.Join(dir, "log.checkpoint"), Every: 3})
			if err != nil {
				rt.Fatal(err)
			}
		}
		l, _ := NewLog(s)
		writers := rapid.IntRange(1, 8).Draw(rt, "writers")
		per := rapid.IntRange(1, 20).Draw(rt, "per")
		crashAfter := rapid.IntRange(0, writers*per).Draw(rt, "crashAfter")
		keep := rapid.IntRange(0, 300).Draw(rt, "keep")
		deferred := rapid.Bool().Draw(rt, "deferred")

		var mu sync.Mutex
		acked := map[Hash]bool{}
		crashed := make(chan []byte, 1)
		var img []byte
		ackedAtCrash := map[Hash]bool{}
		ack := func(h Hash) {
			mu.Lock()
			defer mu.Unlock()
			acked[h] = true
			if len(acked) == crashAfter && img == nil {
				for k := range acked {
					ackedAtCrash[k] = true
				}
				img = fs.image("log", keep)
				crashed <- img
			}
		}
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range per {
					ctx, d := context.Background(), (*Durability)(nil)
					if deferred {
						ctx, d = DeferDurability(ctx)
					}
					e, err := l.Append(ctx, "a.b", []byte(fmt.Sprintf(`{"i":%d,"w":%d}`, i, w)))
					if err == nil && d != nil {
						err = d.Wait()
					}
					if err != nil {
						rt.Error(err)
						return
					}
					ack(e.Hash)
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		if crashAfter == 0 {
			mu.Lock()
			img = fs.image("log", keep)
			mu.Unlock()
		} else {
			select {
			case img = <-crashed:
			case <-done:
				mu.Lock()
				n := len(acked)
				mu.Unlock()
				if n < crashAfter {
					rt.Fatalf("only %d appends were acknowledged", n)
				}
				img = <-crashed
			}
		}
		<-done
		require.NoError(rt, s.Close())

		after := newFaultFS()
		_, _ = after.OpenFile("log")
		after.setBytes("log", img)
		r, err := OpenFile("log", FileOptions{fs: after})
		if errors.Is(err, ErrTornTail) {
			_, err = repairFile("log", after)
			require.NoError(rt, err)
			r, err = OpenFile("log", FileOptions{fs: after})
		}
		require.NoError(rt, err, "the crashed log reopens")
		defer r.Close()
		var got []Entry
		for e, err := range r.Entries(context.Background(), 0) {
			require.NoError(rt, err)
			got = append(got, e)
		}
		_, err = Verify(got)
		require.NoError(rt, err)
		have := map[Hash]bool{}
		for _, e := range got {
			have[e.Hash] = true
		}
		for h := range ackedAtCrash {
			if !have[h] {
				rt.Fatalf("entry %s was acknowledged before the crash and is lost", h)
			}
		}
	})
}
