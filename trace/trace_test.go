package trace

// This file checks the guarantees of the log itself; format_test.go and
// vectors_test.go check that a log file's reader and writer agree, and
// conformance_test.go runs the trace/storetest suite on Memory and File.
//
//   - Tamper evidence: changing any field of any entry is detected at or
//     before that entry (TestTamperEvidence, TestChainBreakReportsWhere,
//     TestVerifyRejectsTimeOutsideWireForm).
//   - Truncation is detected against a trusted head
//     (TestVerifyAgainstDetectsTruncation).
//   - No fork under concurrency: however many goroutines append through one
//     Log, the result is one gap-free chain (TestLogConcurrentAppendsNeverFork;
//     storetest ConcurrentLogsNeverFork for several Logs over one store; run
//     with -race).
//   - Crash safety of File: after any sequence of appends, syncs, injected
//     short writes and failed fsyncs, crashes and reopens, the log is a
//     prefix of what was appended, holds everything acknowledged as
//     durable, and verifies (TestFileCrashRecovery, a rapid state machine;
//     TestFileShortWriteRollsBack, TestFileFailedSyncBreaksStore).
//   - Every single-byte change of a log file is detected on open
//     (TestFileEveryByteFlipDetected, FuzzOpenFile); a torn tail, down to a
//     final frame header kept in part, is repaired without loss
//     (TestFileTornTailRepair, TestFileTornFrameHeader,
//     TestRepairFileKeepsEarlierSideFiles);
//     damage before the final record never is (TestFileMidCorruptionNeverRepaired,
//     TestFileRemovedRecordIsNotATornTail, TestFileDamagedPrevIsCorrupt).
//   - The byte layout is pinned by TestHashWorkedExample, whose hashes were
//     checked independently of this code.
//   - The JSON form of an entry reads back as the same entry
//     (TestEntryJSONRoundTrip, TestEntryJSONSeqIsExact, FuzzEntryJSON).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	iofs "io/fs"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/internal/canon"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

func buildChain(t testing.TB, n int) []Entry {
	t.Helper()
	var h Head
	out := make([]Entry, 0, n)
	for i := 0; i < n; i++ {
		e, nh, err := Next(h, "test.step", []byte(fmt.Sprintf(`{"i":%d}`, i)), t0.Add(time.Duration(i)*time.Second))
		require.NoError(t, err)
		out = append(out, e)
		h = nh
	}
	return out
}

// TestHashWorkedExample pins the byte layout documented in FORMAT.md.
func TestHashWorkedExample(t *testing.T) {
	e, h, err := Next(Head{}, "example.greeting", []byte(`{"hello":"world"}`), t0)
	require.NoError(t, err)
	pre := appendPreimage(nil, e.Seq, e.Prev, e.Kind, e.Time, e.Payload)
	assert.Equal(t, "00"+"0000000000000000"+
		"0000000000000000000000000000000000000000000000000000000000000000"+
		"00000010"+hex.EncodeToString([]byte("example.greeting"))+
		hex.EncodeToString([]byte("2026-01-02T03:04:05.000000006Z"))+
		"00000011"+hex.EncodeToString([]byte(`{"hello":"world"}`)), hex.EncodeToString(pre))
	assert.Equal(t, workedExampleHash, e.Hash.String())
	assert.Equal(t, Head{Size: 1, Hash: e.Hash}, h)

	e2, _, err := Next(h, "example.greeting", []byte(`{"hello":"again"}`), t0.Add(time.Second))
	require.NoError(t, err)
	assert.Equal(t, workedExampleHash2, e2.Hash.String())

	frame := appendFrame(nil, e)
	assert.Equal(t, workedExampleFrame, hex.EncodeToString(frame))
}

const (
	workedExampleHash  = "fc1baad0e4a455b93da4a984027253739cb47824c4264e5d4da15918eef5f605"
	workedExampleHash2 = "d25b87556076e1b3b6b0aecbfbdc81d0c50d4439e602a08a78e83b8ec1ce06d2"
	workedExampleFrame = "0000008f94824c9b" + "0000000000000000" + "0000000000000000000000000000000000000000000000000000000000000000" + "00000010" + "6578616d706c652e6772656574696e67" + "323032362d30312d30325430333a30343a30352e3030303030303030365a" + "00000011" + "7b2268656c6c6f223a22776f726c64227d" + workedExampleHash
)

// TestTamperEvidence: changing any field of any entry is detected by
// Verify at or before that entry.
func TestTamperEvidence(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "n")
		var h Head
		es := make([]Entry, 0, n)
		for i := 0; i < n; i++ {
			kind := rapid.SampledFrom([]string{"kernel.execute", "belief.eliminate", "a", "x.y-z_0"}).Draw(t, "kind")
			payload, err := json.Marshal(map[string]any{"v": rapid.String().Draw(t, "v")})
			require.NoError(t, err)
			e, nh, err := Next(h, kind, mustCanon(t, payload), t0.Add(time.Duration(rapid.Int64Range(0, 1e15).Draw(t, "dt"))))
			require.NoError(t, err)
			es = append(es, e)
			h = nh
		}
		_, err := Verify(es)
		require.NoError(t, err)
		i := rapid.IntRange(0, n-1).Draw(t, "victim")
		bad := append([]Entry(nil), es...)
		e := bad[i]
		e.Payload = bytes.Clone(e.Payload)
		switch rapid.IntRange(0, 5).Draw(t, "field") {
		case 0:
			e.Seq++
		case 1:
			e.Prev[rapid.IntRange(0, 31).Draw(t, "b")] ^= 1 << rapid.IntRange(0, 7).Draw(t, "bit")
		case 2:
			e.Kind += "x"
		case 3:
			e.Payload[rapid.IntRange(0, len(e.Payload)-1).Draw(t, "b")] ^= 1 << rapid.IntRange(0, 7).Draw(t, "bit")
		case 4:
			e.Time = e.Time.Add(time.Nanosecond)
		case 5:
			e.Hash[rapid.IntRange(0, 31).Draw(t, "b")] ^= 1 << rapid.IntRange(0, 7).Draw(t, "bit")
		}
		bad[i] = e
		_, err = Verify(bad)
		var cb *ChainBreakError
		require.ErrorAs(t, err, &cb)
		if cb.Index > uint64(i) {
			t.Fatalf("tampering with entry %d reported at %d", i, cb.Index)
		}
	})
}

func mustCanon(t *rapid.T, b []byte) []byte {
	c, err := canonTransform(b)
	require.NoError(t, err)
	return c
}

func TestChainBreakReportsWhere(t *testing.T) {
	es := buildChain(t, 5)
	es[3].Payload = []byte(`{"i":33}`)
	_, err := Verify(es)
	var cb *ChainBreakError
	require.ErrorAs(t, err, &cb)
	assert.Equal(t, uint64(3), cb.Index)
	assert.Equal(t, "hash", cb.Field)
	assert.Equal(t, es[3].Hash.String(), cb.Actual)
	assert.Equal(t, EntryHash(es[3]).String(), cb.Expected)
	assert.ErrorIs(t, err, ErrChainBreak)

	es = buildChain(t, 5)
	es = append(es[:2], es[3:]...) // drop entry 2
	_, err = Verify(es)
	require.ErrorAs(t, err, &cb)
	assert.Equal(t, uint64(2), cb.Index)
	assert.Equal(t, "seq", cb.Field)
}

func TestVerifyAgainstDetectsTruncation(t *testing.T) {
	es := buildChain(t, 6)
	trusted := Head{Size: 6, Hash: es[5].Hash}
	_, err := VerifyAgainst(es, trusted)
	require.NoError(t, err)
	_, err = Verify(es[:4])
	require.NoError(t, err, "a truncated log verifies on its own")
	_, err = VerifyAgainst(es[:4], trusted)
	var te *TruncatedError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, uint64(4), te.Got.Size)
	assert.NotErrorIs(t, err, ErrChainBreak)

	// a log rewritten from entry 3 on, with the same length, is caught too
	alt := append([]Entry(nil), es[:3]...)
	h := Head{Size: 3, Hash: es[2].Hash}
	for i := 3; i < 6; i++ {
		e, nh, err := Next(h, "test.step", []byte(`{"forged":true}`), t0)
		require.NoError(t, err)
		alt = append(alt, e)
		h = nh
	}
	_, err = VerifyAgainst(alt, trusted)
	require.ErrorIs(t, err, ErrTruncated)
	// and a longer log that extends the trusted head is fine
	_, err = VerifyAgainst(es, Head{Size: 3, Hash: es[2].Hash})
	require.NoError(t, err)
}

func TestNextRejects(t *testing.T) {
	cases := []struct {
		name, kind, payload string
		at                  time.Time
	}{
		{"empty kind", "", `{}`, t0},
		{"upper-case kind", "Kernel.execute", `{}`, t0},
		{"leading dot", ".a", `{}`, t0},
		{"trailing dot", "a.", `{}`, t0},
		{"double dot", "a..b", `{}`, t0},
		{"space", "a b", `{}`, t0},
		{"long kind", string(bytes.Repeat([]byte("a"), MaxKindLen+1)), `{}`, t0},
		{"non-canonical payload", "a", `{"b":1,"a":2}`, t0},
		{"whitespace payload", "a", `{ }`, t0},
		{"invalid payload", "a", `{`, t0},
		{"empty payload", "a", ``, t0},
		{"year 10000", "a", `{}`, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		_, h, err := Next(Head{Size: 7}, c.kind, []byte(c.payload), c.at)
		assert.ErrorIs(t, err, ErrMalformed, c.name)
		assert.Equal(t, Head{Size: 7}, h, "%s: rejection changes nothing", c.name)
	}
}

func TestTimeIsNormalised(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	e, _, err := Next(Head{}, "a", []byte(`{}`), time.Date(2026, 1, 1, 1, 0, 0, 5, loc))
	require.NoError(t, err)
	assert.Equal(t, "2026-01-01T00:00:00.000000005Z", FormatTime(e.Time))
	assert.Equal(t, time.UTC, e.Time.Location())
	_, err = ParseTime("2026-01-01T00:00:00Z")
	assert.ErrorIs(t, err, ErrMalformed)
	_, err = ParseTime("2026-01-01T00:00:00.000000000+00:00")
	assert.ErrorIs(t, err, ErrMalformed)
}

func TestEntryJSONRoundTrip(t *testing.T) {
	es := buildChain(t, 3)
	b, err := json.Marshal(es)
	require.NoError(t, err)
	var back []Entry
	require.NoError(t, json.Unmarshal(b, &back))
	_, err = Verify(back)
	require.NoError(t, err)
	for i := range es {
		assert.Equal(t, es[i].Hash, back[i].Hash)
		assert.True(t, es[i].Time.Equal(back[i].Time))
	}
	var e Entry
	assert.Error(t, json.Unmarshal([]byte(`{"seq":0}`), &e))
	assert.Error(t, json.Unmarshal([]byte(`{"seq":0,"prev":"00","kind":"a","payload":{},"time":"2026-01-02T03:04:05.000000006Z","hash":"00"}`), &e))
}

// TestEntryJSONSeqIsExact: the wire form writes seq as a JSON number, which
// a reader parsing doubles reads exactly only up to 2^53-1. MarshalJSON
// refuses a larger seq (2^60, say, would be written with the digits of the
// nearest double's shortest form, 1152921504606847000), as UnmarshalJSON
// refuses to read one, so every entry it writes reads back as itself.
func TestEntryJSONSeqIsExact(t *testing.T) {
	e := buildChain(t, 1)[0]
	for _, seq := range []uint64{canon.MaxSafeInteger + 1, 1 << 60, math.MaxUint64} {
		e.Seq = seq
		_, err := json.Marshal(e)
		require.ErrorIs(t, err, ErrMalformed, "seq %d", seq)
	}
	e.Seq = canon.MaxSafeInteger
	b, err := json.Marshal(e)
	require.NoError(t, err)
	var back Entry
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, e.Seq, back.Seq)
}

func TestLogAppendCanonicalises(t *testing.T) {
	l := NewMemoryLog()
	e, err := l.Append(context.Background(), "a.b", []byte(`{ "z": 1.50, "a": "<x>" }`))
	require.NoError(t, err)
	assert.Equal(t, `{"a":"<x>","z":1.5}`, string(e.Payload))
	_, err = l.Append(context.Background(), "a.b", []byte(`{"z":`))
	assert.ErrorIs(t, err, ErrMalformed, "a payload that is not JSON")
	e, err = l.AppendValue(context.Background(), "a.b", map[string]any{"k": []int{1, 2}})
	require.NoError(t, err)
	assert.Equal(t, `{"k":[1,2]}`, string(e.Payload))
	assert.Equal(t, uint64(2), l.Head().Size)
}

// TestLogConcurrentAppendsNeverFork: many goroutines append through one
// Log; the result is one gap-free, verifying chain with every entry.
func TestLogConcurrentAppendsNeverFork(t *testing.T) {
	for name, mk := range map[string]func(t *testing.T) Store{
		"memory": func(t *testing.T) Store { return NewMemory() },
		"file-group": func(t *testing.T) Store {
			s, err := OpenFile(filepath.Join(t.TempDir(), "log"), FileOptions{Sync: SyncGroup, GroupMaxBatch: 16})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	} {
		t.Run(name, func(t *testing.T) {
			l, err := NewLog(mk(t))
			require.NoError(t, err)
			const g, n = 32, 50
			var wg sync.WaitGroup
			seen := make([][]uint64, g)
			for w := 0; w < g; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := 0; i < n; i++ {
						e, err := l.AppendValue(context.Background(), "test.concurrent", map[string]any{"w": w, "i": i})
						if err != nil {
							t.Error(err)
							return
						}
						seen[w] = append(seen[w], e.Seq)
					}
				}(w)
			}
			wg.Wait()
			h, err := l.Verify(context.Background())
			require.NoError(t, err)
			assert.Equal(t, uint64(g*n), h.Size)
			assert.Equal(t, l.Head(), h)
			all := map[uint64]bool{}
			for _, s := range seen {
				for _, q := range s {
					assert.False(t, all[q], "sequence %d handed out twice", q)
					all[q] = true
				}
			}
			assert.Len(t, all, g*n)
		})
	}
}

func TestAfterConflictRefreshesTheHead(t *testing.T) {
	store := NewMemory()
	a, err := NewLog(store)
	require.NoError(t, err)
	b, err := NewLog(store)
	require.NoError(t, err)
	h0 := a.Head()
	_, err = a.Append(context.Background(), "x.a", []byte(`{}`), After(h0))
	require.NoError(t, err)
	_, err = b.Append(context.Background(), "x.b", []byte(`{}`), After(h0))
	require.ErrorIs(t, err, ErrConflict, "b's expected head is stale")
	assert.Equal(t, a.Head(), b.Head(), "an append refused by After refreshes the head")
	_, err = b.Append(context.Background(), "x.b", []byte(`{`), After(b.Head()))
	require.ErrorIs(t, err, ErrMalformed, "the payload is checked with After too")
	// plain Append retries through the conflict
	_, err = a.Append(context.Background(), "x.a", []byte(`{}`))
	require.NoError(t, err)
	_, err = b.Append(context.Background(), "x.b", []byte(`{}`))
	require.NoError(t, err)
	h, err := VerifyStore(context.Background(), store)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), h.Size)
}

func TestEntriesFrom(t *testing.T) {
	l := NewMemoryLog()
	for i := 0; i < 10; i++ {
		_, err := l.AppendValue(context.Background(), "x", map[string]int{"i": i})
		require.NoError(t, err)
	}
	var seqs []uint64
	for e, err := range l.Entries(context.Background(), 7) {
		require.NoError(t, err)
		seqs = append(seqs, e.Seq)
	}
	assert.Equal(t, []uint64{7, 8, 9}, seqs)
}

func TestFileReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	s, err := OpenFile(path, FileOptions{})
	require.NoError(t, err)
	l, err := NewLog(s)
	require.NoError(t, err)
	for i := 0; i < 20; i++ {
		_, err := l.AppendValue(context.Background(), "x.y", map[string]int{"i": i})
		require.NoError(t, err)
	}
	want := l.Head()
	require.NoError(t, s.Close())
	s2, err := OpenFile(path, FileOptions{})
	require.NoError(t, err)
	defer s2.Close()
	l2, err := NewLog(s2)
	require.NoError(t, err)
	assert.Equal(t, want, l2.Head())
	_, err = l2.VerifyAgainst(context.Background(), want)
	require.NoError(t, err)
	_, err = l2.AppendValue(context.Background(), "x.y", map[string]int{"i": 20})
	require.NoError(t, err)
}

func fileWith(t *testing.T, n int) (*faultFS, []byte) {
	fs := newFaultFS()
	s, err := OpenFile("log", FileOptions{fs: fs})
	require.NoError(t, err)
	require.NoError(t, s.Append(context.Background(), buildChain(t, n)...))
	require.NoError(t, s.Close())
	return fs, fs.bytes("log")
}

// TestFileEveryByteFlipDetected flips each bit-pattern of every byte of a
// small log file, one at a time: each flip is detected on open, and it is
// called a torn tail only when it lies in the final record.
func TestFileEveryByteFlipDetected(t *testing.T) {
	fs, good := fileWith(t, 4)
	finalStart := int64(len(good)) - int64(frameHeaderLen+int(bodyFixedLen)+len("test.step")+len(`{"i":3}`))
	for i := range good {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(good)
			bad[i] ^= mask
			fs.setBytes("log", bad)
			s, err := OpenFile("log", FileOptions{fs: fs})
			if err == nil {
				s.Close()
				t.Fatalf("flip 0x%02x at byte %d not detected", mask, i)
			}
			var torn *TornTailError
			if errors.As(err, &torn) {
				if int64(i) < finalStart {
					t.Fatalf("flip at byte %d (before the final record at %d) reported as torn tail: %v", i, finalStart, err)
				}
				continue
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrChainBreak) {
				t.Fatalf("flip at byte %d: unexpected error kind %v", i, err)
			}
		}
	}
}

// TestFileTornTailRepair cuts the file at every length inside its final
// record: open reports a torn tail, RepairFile cuts it off and keeps the
// bytes aside, and the log then opens with every earlier entry.
func TestFileTornTailRepair(t *testing.T) {
	fs, good := fileWith(t, 3)
	fs2, two := fileWith(t, 2)
	_ = fs2
	for cut := len(two) + 1; cut < len(good); cut++ {
		fs.setBytes("log", good[:cut])
		_, err := OpenFile("log", FileOptions{fs: fs})
		var torn *TornTailError
		require.ErrorAs(t, err, &torn, "cut at %d", cut)
		assert.Equal(t, uint64(2), torn.Index)
		assert.Equal(t, int64(len(two)), torn.Offset)
		res, err := repairFile("log", fs)
		require.NoError(t, err)
		assert.Equal(t, uint64(2), res.Entries)
		assert.Equal(t, int64(cut-len(two)), res.CutBytes)
		assert.Equal(t, good[len(two):cut], fs.bytes(res.SideFile), "the cut bytes are kept aside")
		s, err := OpenFile("log", FileOptions{fs: fs})
		require.NoError(t, err)
		h, _ := s.Head(context.Background())
		assert.Equal(t, uint64(2), h.Size)
		require.NoError(t, s.Close())
	}
	// a zero-filled tail (preallocated, never written) is torn too
	fs.setBytes("log", append(bytes.Clone(two), make([]byte, 100)...))
	_, err := OpenFile("log", FileOptions{fs: fs})
	require.ErrorIs(t, err, ErrTornTail)
}

func TestFileMidCorruptionNeverRepaired(t *testing.T) {
	fs, good := fileWith(t, 4)
	bad := bytes.Clone(good)
	bad[len(fileMagic)+frameHeaderLen+50] ^= 0x10 // inside entry 0's payload area
	fs.setBytes("log", bad)
	_, err := OpenFile("log", FileOptions{fs: fs})
	var ce *CorruptRecordError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, uint64(0), ce.Index)
	_, err = repairFile("log", fs)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Equal(t, bad, fs.bytes("log"), "repair refused and left the file alone")
}

func TestFileShortWriteRollsBack(t *testing.T) {
	fs := newFaultFS()
	s, err := OpenFile("log", FileOptions{fs: fs})
	require.NoError(t, err)
	es := buildChain(t, 3)
	require.NoError(t, s.Append(context.Background(), es[0]))
	fs.shortWrites = 1
	require.Error(t, s.Append(context.Background(), es[1]))
	h, err := s.Head(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(1), h.Size)
	require.NoError(t, s.Append(context.Background(), es[1]), "the store recovers from a short write")
	require.NoError(t, s.Close())
	s, err = OpenFile("log", FileOptions{fs: fs})
	require.NoError(t, err)
	h, _ = s.Head(context.Background())
	assert.Equal(t, uint64(2), h.Size)
}

func TestFileFailedSyncBreaksStore(t *testing.T) {
	fs := newFaultFS()
	s, err := OpenFile("log", FileOptions{fs: fs})
	require.NoError(t, err)
	es := buildChain(t, 2)
	fs.failSyncs = 1
	err = s.Append(context.Background(), es[0])
	require.ErrorIs(t, err, ErrBroken)
	assert.ErrorIs(t, s.Append(context.Background(), es[1]), ErrBroken, "no appends after an fsync failure")
	_, err = s.Head(context.Background())
	assert.ErrorIs(t, err, ErrBroken)
}

// TestFileCrashRecovery is a rapid state machine over Append, Sync, Crash
// and Reopen. After every reopen the log is a prefix of what was appended,
// holds everything acknowledged as durable, and verifies.
func TestFileCrashRecovery(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &crashMachine{fs: newFaultFS(), policy: rapid.SampledFrom([]SyncPolicy{SyncEveryAppend, SyncGroup, SyncManual}).Draw(t, "policy")}
		m.open(t)
		t.Repeat(rapid.StateMachineActions(m))
	})
}

type crashMachine struct {
	fs       *faultFS
	policy   SyncPolicy
	store    *File
	written  []Entry // entries the store accepted, in order
	pending  *Entry  // an entry whose append failed after maybe reaching the file
	durable  int     // how many of written are known durable
	appended int
}

func (m *crashMachine) open(t *rapid.T) {
	s, err := OpenFile("log", FileOptions{fs: m.fs, Sync: m.policy})
	if errors.Is(err, ErrTornTail) {
		if _, rerr := repairFile("log", m.fs); rerr != nil {
			t.Fatalf("repair: %v", rerr)
		}
		s, err = OpenFile("log", FileOptions{fs: m.fs, Sync: m.policy})
	}
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	var got []Entry
	for e, err := range s.Entries(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	if _, err := Verify(got); err != nil {
		t.Fatalf("reopened log does not verify: %v", err)
	}
	if len(got) < m.durable {
		t.Fatalf("lost acknowledged entries: have %d, %d were durable", len(got), m.durable)
	}
	candidates := append([]Entry(nil), m.written...)
	if m.pending != nil {
		candidates = append(candidates, *m.pending)
	}
	if len(got) > len(candidates) {
		t.Fatalf("log has %d entries, only %d were ever appended", len(got), len(candidates))
	}
	for i := range got {
		if got[i].Hash != candidates[i].Hash {
			t.Fatalf("entry %d is not what was appended", i)
		}
	}
	m.store, m.written, m.pending = s, got, nil
}

func (m *crashMachine) Append(t *rapid.T) {
	if m.store == nil {
		t.Skip("crashed")
	}
	h, err := m.store.Head(context.Background())
	if err != nil {
		t.Skip("store broken")
	}
	m.appended++
	e, _, err := Next(h, "crash.append", []byte(fmt.Sprintf(`{"n":%d}`, m.appended)), t0)
	if err != nil {
		t.Fatal(err)
	}
	switch rapid.IntRange(0, 9).Draw(t, "fault") {
	case 0:
		m.fs.shortWrites = 1
	case 1:
		m.fs.failSyncs = 1
	}
	err = m.store.Append(context.Background(), e)
	m.fs.shortWrites, m.fs.failSyncs = 0, 0
	if err != nil {
		m.pending = &e
		return
	}
	m.written = append(m.written, e)
	if m.policy != SyncManual { // every-append and group commit return once durable
		m.durable = len(m.written)
	}
}

func (m *crashMachine) Sync(t *rapid.T) {
	if m.store == nil {
		t.Skip("crashed")
	}
	if rapid.Bool().Draw(t, "failSync") {
		m.fs.failSyncs = 1
	}
	err := m.store.Sync()
	m.fs.failSyncs = 0
	if err == nil {
		m.durable = len(m.written)
	}
}

func (m *crashMachine) Crash(t *rapid.T) {
	m.fs.crash(rapid.IntRange(0, 200).Draw(t, "keep"))
	m.store = nil
}

func (m *crashMachine) Reopen(t *rapid.T) {
	if m.store != nil {
		_ = m.store.Close()
		if m.store.broken == nil {
			m.durable = len(m.written) // Close syncs
		}
	}
	m.open(t)
}

func (m *crashMachine) Check(t *rapid.T) {
	if m.store == nil || m.store.broken != nil {
		return
	}
	h, err := m.store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h.Size != uint64(len(m.written)) {
		t.Fatalf("head size %d, model %d", h.Size, len(m.written))
	}
}

func FuzzOpenFile(f *testing.F) {
	fs := newFaultFS()
	s, _ := OpenFile("seed", FileOptions{fs: fs})
	_ = s.Append(context.Background(), buildChain(f, 3)...)
	_ = s.Close()
	good := fs.bytes("seed")
	f.Add(good)
	f.Add(good[:len(good)-5])
	f.Add([]byte(fileMagic))
	f.Add([]byte("VTR"))
	for _, b := range vectorLogs(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := faultFSWith(data)
		s, err := OpenFile("log", FileOptions{fs: fs})
		if err != nil {
			if errors.Is(err, ErrTornTail) {
				if _, err := repairFile("log", fs); err != nil {
					t.Fatalf("repair of a torn tail failed: %v", err)
				}
				s, err = OpenFile("log", FileOptions{fs: fs})
				if err != nil {
					t.Fatalf("open after repair: %v", err)
				}
			} else {
				return
			}
		}
		defer s.Close()
		if _, err := VerifyStore(context.Background(), s); err != nil {
			t.Fatalf("an opened file does not verify: %v", err)
		}
		// what the reader accepted, the writer would have written
		for e, err := range s.Entries(context.Background(), 0) {
			if err != nil {
				t.Fatal(err)
			}
			if err := ValidFields(e); err != nil {
				t.Fatalf("an opened file holds entry %d, which File.Append refuses: %v", e.Seq, err)
			}
		}
	})
}

func FuzzEntryJSON(f *testing.F) {
	es := buildChain(f, 1)
	b, _ := json.Marshal(es[0])
	f.Add(b)
	f.Add([]byte(`{"seq":1,"prev":"` + Genesis.String() + `","kind":"a","payload":[1],"time":"2026-01-02T03:04:05.000000006Z","hash":"` + Genesis.String() + `"}`))
	// a seq beyond 2^53-1 is refused on the way in, as it is on the way out
	f.Add([]byte(`{"seq":9007199254740993,"prev":"` + Genesis.String() + `","kind":"a","payload":[1],"time":"2026-01-02T03:04:05.000000006Z","hash":"` + Genesis.String() + `"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var e Entry
		if err := json.Unmarshal(data, &e); err != nil {
			return
		}
		out, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("decoded entry does not encode: %v", err)
		}
		var again Entry
		if err := json.Unmarshal(out, &again); err != nil || EntryHash(again) != EntryHash(e) {
			t.Fatalf("round trip changed the entry: %v", err)
		}
	})
}

// TestVerifyRejectsTimeOutsideWireForm: the wire form of a time has a
// four-digit year, so a time outside 0000-9999 would hash like another time
// (year 12026 like 2026). Verify must not accept such an entry, or the time
// field would not be covered by the hash.
func TestVerifyRejectsTimeOutsideWireForm(t *testing.T) {
	e := buildChain(t, 1)[0]
	for _, years := range []int{10000, -3000} {
		forged := e
		forged.Time = e.Time.AddDate(years, 0, 0)
		_, err := Verify([]Entry{forged})
		var cb *ChainBreakError
		require.ErrorAs(t, err, &cb, "time moved by %d years (%v) verified", years, forged.Time)
		assert.Equal(t, uint64(0), cb.Index)
	}
}

// TestFileConcurrentClose: two goroutines closing a group-commit store at
// once must not panic; one of them gets ErrClosed.
func TestFileConcurrentClose(t *testing.T) {
	for i := 0; i < 200; i++ {
		s, err := OpenFile("log", FileOptions{fs: newFaultFS(), Sync: SyncGroup})
		require.NoError(t, err)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for j := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); <-start; errs[j] = s.Close() }()
		}
		close(start)
		wg.Wait()
		nils := 0
		for _, err := range errs {
			if err == nil {
				nils++
			} else {
				require.ErrorIs(t, err, ErrClosed)
			}
		}
		require.Equal(t, 1, nils, "exactly one Close succeeds: %v", errs)
	}
}

// TestFileRetriedCreateSyncsDir: when creating a log fails after the file
// exists (here its first fsync fails), opening it again must still make the
// directory entry durable, or every entry acknowledged afterwards is lost
// with the file in a crash.
func TestFileRetriedCreateSyncsDir(t *testing.T) {
	fs := newFaultFS()
	fs.failSyncs = 1
	_, err := OpenFile("log", FileOptions{fs: fs})
	require.Error(t, err, "the injected fsync failure fails the create")
	s, err := OpenFile("log", FileOptions{fs: fs})
	require.NoError(t, err)
	es := buildChain(t, 1)
	require.NoError(t, s.Append(context.Background(), es[0]), "acknowledged as durable")
	fs.crash(0)
	s, err = OpenFile("log", FileOptions{fs: fs})
	require.NoError(t, err)
	h, err := s.Head(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(1), h.Size, "the acknowledged entry survives the crash")
}

// TestRepairFileLeavesMissingAndEmptyAlone: there is nothing torn in a
// missing or empty file, so RepairFile creates neither it nor a side file.
func TestRepairFileLeavesMissingAndEmptyAlone(t *testing.T) {
	fs := newFaultFS()
	_, err := repairFile("missing", fs)
	require.ErrorIs(t, err, iofs.ErrNotExist)
	ok, _ := fs.Exists("missing")
	assert.False(t, ok, "RepairFile created the log")

	fs.OpenFile("empty")
	fs.setBytes("empty", nil)
	res, err := repairFile("empty", fs)
	require.NoError(t, err)
	assert.Equal(t, RepairResult{}, res)
	ok, _ = fs.Exists("empty.torn-0")
	assert.False(t, ok, "RepairFile wrote a side file for an empty log")
}

// TestFileTornRecordBeforeZeroTail: a crash that keeps the file's new size
// but not all of its new pages leaves the last record written damaged and
// zeros after it (group commit and batches write several records before
// one fsync). That is a torn tail, as a zero-filled tail alone is, not
// corruption that keeps the log from opening.
func TestFileTornRecordBeforeZeroTail(t *testing.T) {
	fs, good := fileWith(t, 3)
	_, two := fileWith(t, 2)
	bad := bytes.Clone(good)
	clear(bad[len(bad)-20:]) // the end of record 2 never reached the disk
	bad = append(bad, make([]byte, 100)...)
	fs.setBytes("log", bad)
	_, err := OpenFile("log", FileOptions{fs: fs})
	var torn *TornTailError
	require.ErrorAs(t, err, &torn)
	assert.Equal(t, uint64(2), torn.Index)
	assert.Equal(t, int64(len(two)), torn.Offset)
	res, err := repairFile("log", fs)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.Entries)
	assert.Equal(t, bad[len(two):], fs.bytes(res.SideFile))
	assert.Equal(t, two, fs.bytes("log"))

	// zeros after a damaged record that is followed by intact ones are
	// still corruption
	mid := bytes.Clone(good)
	clear(mid[len(two)-20 : len(two)])
	fs.setBytes("log", mid)
	_, err = OpenFile("log", FileOptions{fs: fs})
	require.ErrorIs(t, err, ErrCorrupt)
}

// TestFileTornFrameHeader: a crash can keep part of the final record's
// frame header (which may straddle a page boundary) and none of what
// follows it. Whatever part is kept, and whatever it holds, a header whose
// checksum fails with only zeros after it is a torn tail that RepairFile
// cuts off; a non-zero byte anywhere after it makes it corruption.
func TestFileTornFrameHeader(t *testing.T) {
	fs, good := fileWith(t, 3)
	_, two := fileWith(t, 2)
	for kept := 1; kept < frameHeaderLen; kept++ {
		for _, junk := range []byte{0x00, 0x5a, 0xff} {
			for _, tail := range []int{0, 1, 100} {
				bad := bytes.Clone(good)
				hdr := bad[len(two) : len(two)+frameHeaderLen]
				for i := kept; i < frameHeaderLen; i++ {
					hdr[i] = junk // the lost part: zeros, or whatever the page held
				}
				clear(bad[len(two)+frameHeaderLen:])
				bad = append(bad, make([]byte, tail)...)
				if crc32.Checksum(hdr[:4], castagnoli) == binary.BigEndian.Uint32(hdr[4:]) {
					continue // the header reads as written
				}
				what := fmt.Sprintf("%d header bytes kept, rest 0x%02x, %d zeros more", kept, junk, tail)
				fs.setBytes("log", bad)
				_, err := OpenFile("log", FileOptions{fs: fs})
				var torn *TornTailError
				require.ErrorAs(t, err, &torn, what)
				assert.Equal(t, uint64(2), torn.Index, what)
				assert.Equal(t, int64(len(two)), torn.Offset, what)
				res, err := repairFile("log", fs)
				require.NoError(t, err, what)
				assert.Equal(t, uint64(2), res.Entries, what)
				assert.Equal(t, two, fs.bytes("log"), what)

				bad[len(bad)-1] = 0x01
				fs.setBytes("log", bad)
				_, err = OpenFile("log", FileOptions{fs: fs})
				require.ErrorIs(t, err, ErrCorrupt, "%s, then a non-zero byte", what)
			}
		}
	}
}

// TestFileAppendRejectsMalformed: File must not write an entry it cannot
// read back (OpenFile would then call the log corrupt); like the SQL
// stores it rejects the entry with ErrMalformed and stores nothing.
func TestFileAppendRejectsMalformed(t *testing.T) {
	fs := newFaultFS()
	s, err := OpenFile("log", FileOptions{fs: fs})
	require.NoError(t, err)
	good := buildChain(t, 1)[0]
	badKind := good
	badKind.Kind = "Bad Kind"
	badTime := good
	badTime.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	huge := good
	huge.Payload = make([]byte, MaxPayloadLen+1)
	for _, bad := range []Entry{badKind, badTime, huge} {
		require.ErrorIs(t, s.Append(context.Background(), bad), ErrMalformed)
	}
	require.NoError(t, s.Append(context.Background(), good))
	require.NoError(t, s.Close())
	s, err = OpenFile("log", FileOptions{fs: fs})
	require.NoError(t, err)
	h, _ := s.Head(context.Background())
	assert.Equal(t, Head{Size: 1, Hash: good.Hash}, h)
}

// TestFileRemovedRecordIsNotATornTail: cutting a record out of the file
// leaves an intact final record that does not link. A crash cannot make
// such a record, so it is a chain break, never a torn tail that RepairFile
// would "fix" by dropping one more entry and hiding the removal.
func TestFileRemovedRecordIsNotATornTail(t *testing.T) {
	fs, good := fileWith(t, 4)
	_, three := fileWith(t, 3)
	_, two := fileWith(t, 2)
	bad := append(bytes.Clone(two), good[len(three):]...) // entry 2 removed
	fs.setBytes("log", bad)
	_, err := OpenFile("log", FileOptions{fs: fs})
	var cb *ChainBreakError
	require.ErrorAs(t, err, &cb)
	assert.Equal(t, uint64(2), cb.Index)
	assert.NotErrorIs(t, err, ErrTornTail)
	_, err = repairFile("log", fs)
	require.ErrorIs(t, err, ErrChainBreak)
	assert.Equal(t, bad, fs.bytes("log"), "repair refused and left the file alone")
}

// TestFileDamagedPrevIsCorrupt: a flipped bit in a record's prev field
// breaks its own hash as well as the link, so it is damage to that record
// (*CorruptRecordError), not a chain break between intact records.
func TestFileDamagedPrevIsCorrupt(t *testing.T) {
	fs, good := fileWith(t, 3)
	_, one := fileWith(t, 1)
	bad := bytes.Clone(good)
	bad[len(one)+frameHeaderLen+8] ^= 1 // first byte of entry 1's prev
	fs.setBytes("log", bad)
	_, err := OpenFile("log", FileOptions{fs: fs})
	var ce *CorruptRecordError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, uint64(1), ce.Index)
	assert.NotErrorIs(t, err, ErrChainBreak)
}

// TestRepairFileKeepsEarlierSideFiles: a second torn tail at the same
// offset (a crash in the first append after a repair) must not overwrite
// the bytes the first repair kept aside.
func TestRepairFileKeepsEarlierSideFiles(t *testing.T) {
	fs, good := fileWith(t, 3)
	_, two := fileWith(t, 2)
	first := good[:len(good)-7]
	second := good[:len(two)+9]
	var sides []string
	for _, cut := range [][]byte{first, second} {
		fs.setBytes("log", cut)
		res, err := repairFile("log", fs)
		require.NoError(t, err)
		sides = append(sides, res.SideFile)
	}
	require.NotEqual(t, sides[0], sides[1])
	assert.Equal(t, first[len(two):], fs.bytes(sides[0]), "the first repair's bytes are still there")
	assert.Equal(t, second[len(two):], fs.bytes(sides[1]))
}

// TestEntryHashLargePayloads: the streaming path for large payloads hashes
// exactly the documented preimage.
func TestEntryHashLargePayloads(t *testing.T) {
	for _, n := range []int{0, 1, 400, 420, 440, 1900, 1950, 1960, 2000, 2100, 70000} {
		payload := []byte(`"` + string(bytes.Repeat([]byte("x"), n)) + `"`)
		e := Entry{Seq: 9, Prev: Hash{1}, Kind: "big.payload", Payload: payload, Time: t0}
		want := Hash(sha256.Sum256(appendPreimage(nil, e.Seq, e.Prev, e.Kind, e.Time, e.Payload)))
		assert.Equal(t, want, EntryHash(e), "payload of %d bytes", len(payload))
	}
}

// TestMemoryChunks reads a Memory log that spans several chunks (the
// first one grown from 16 entries) from positions around every boundary.
func TestMemoryChunks(t *testing.T) {
	ctx := context.Background()
	s := NewMemory()
	var h Head
	const n = 3*memChunk + 100
	for i := range n {
		e, next, err := Next(h, "test.chunk", []byte(`{}`), t0.Add(time.Duration(i)))
		require.NoError(t, err)
		require.NoError(t, s.Append(ctx, e))
		h = next
	}
	for _, from := range []uint64{0, 1, 15, 16, 17, memChunk - 1, memChunk, memChunk + 1, 2 * memChunk, n - 1, n} {
		want := from
		for e, err := range s.Entries(ctx, from) {
			require.NoError(t, err)
			require.Equal(t, want, e.Seq)
			want++
		}
		require.Equal(t, uint64(n), want, "from %d", from)
	}
	got, err := VerifyStore(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, h, got)
}
