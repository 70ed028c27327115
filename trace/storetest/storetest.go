// Package storetest is the conformance suite for trace.Store
// implementations, in the manner of testing/slogtest: a store author calls
// Run from a test with a function that makes a new, empty store, and every
// store in Verity (Memory, File, the SQL stores) passes the same checks.
//
// The suite checks the Store contract documented on trace.Store: an empty
// store's head, exact round-trips of every field, reads from any sequence
// number, batch appends, all-or-nothing rejection of batches that do not
// continue the head (ErrConflict, nothing stored), all-or-nothing refusal
// of entries whose fields break the format's rules (ErrMalformed: a payload
// trace.ValidPayload refuses, a bad kind or time), entries handed out as
// copies, early-terminated iteration, concurrent writers through several
// trace.Log values never forking the chain, and ErrClosed after Close.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verity-go/verity/trace"
)

// NewStore makes a new, empty store for one subtest. It should register
// any cleanup with t.Cleanup. Stores that share a backend between calls
// must give each call its own log.
type NewStore func(t *testing.T) trace.Store

// Run runs every conformance check against stores made by newStore.
func Run(t *testing.T, newStore NewStore) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, NewStore)
	}{
		{"EmptyHead", testEmptyHead},
		{"AppendAndReadBack", testAppendAndReadBack},
		{"ReadFromMiddle", testReadFromMiddle},
		{"BatchAppend", testBatchAppend},
		{"RejectsWrongSeq", testRejectsWrongSeq},
		{"RejectsWrongPrev", testRejectsWrongPrev},
		{"RejectsBatchAtomically", testRejectsBatchAtomically},
		{"RefusesInvalidPayload", testRefusesInvalidPayload},
		{"RefusesInvalidKindOrTime", testRefusesInvalidKindOrTime},
		{"EntriesAreCopies", testEntriesAreCopies},
		{"EarlyBreak", testEarlyBreak},
		{"LargePayload", testLargePayload},
		{"ConcurrentLogsNeverFork", testConcurrentLogs},
		{"ClosedStore", testClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore) })
	}
}

var base = time.Date(2026, 11, 22, 5, 35, 0, 123456789, time.UTC)

// chain builds n valid entries continuing h.
func chain(t *testing.T, h trace.Head, n int) []trace.Entry {
	t.Helper()
	out := make([]trace.Entry, 0, n)
	for i := 0; i < n; i++ {
		payload := fmt.Sprintf(`{"i":%d,"note":"entry é %d","ok":true}`, h.Size, h.Size)
		e, nh, err := trace.Next(h, "storetest.append", []byte(payload), base.Add(time.Duration(h.Size)*time.Millisecond))
		if err != nil {
			t.Fatalf("trace.Next: %v", err)
		}
		out = append(out, e)
		h = nh
	}
	return out
}

func readAll(t *testing.T, s trace.Store, from uint64) []trace.Entry {
	t.Helper()
	var out []trace.Entry
	for e, err := range s.Entries(context.Background(), from) {
		if err != nil {
			t.Fatalf("Entries(%d): %v", from, err)
		}
		out = append(out, e)
	}
	return out
}

func sameEntry(t *testing.T, want, got trace.Entry) {
	t.Helper()
	if want.Seq != got.Seq || want.Prev != got.Prev || want.Kind != got.Kind || want.Hash != got.Hash ||
		!bytes.Equal(want.Payload, got.Payload) || !want.Time.Equal(got.Time) ||
		trace.FormatTime(want.Time) != trace.FormatTime(got.Time) {
		t.Fatalf("entry %d differs:\nwant %+v\n got %+v", want.Seq, want, got)
	}
	if got.Time.Location() != time.UTC {
		t.Fatalf("entry %d time is not UTC: %v", got.Seq, got.Time.Location())
	}
}

func head(t *testing.T, s trace.Store) trace.Head {
	t.Helper()
	h, err := s.Head(context.Background())
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	return h
}

func testEmptyHead(t *testing.T, newStore NewStore) {
	s := newStore(t)
	if h := head(t, s); h != (trace.Head{}) {
		t.Fatalf("empty store head = %+v, want zero", h)
	}
	if got := readAll(t, s, 0); len(got) != 0 {
		t.Fatalf("empty store yielded %d entries", len(got))
	}
}

func testAppendAndReadBack(t *testing.T, newStore NewStore) {
	s := newStore(t)
	es := chain(t, trace.Head{}, 25)
	for _, e := range es {
		if err := s.Append(context.Background(), e); err != nil {
			t.Fatalf("Append(%d): %v", e.Seq, err)
		}
	}
	if h := head(t, s); h.Size != 25 || h.Hash != es[24].Hash {
		t.Fatalf("head = %+v, want size 25 hash %s", h, es[24].Hash)
	}
	got := readAll(t, s, 0)
	if len(got) != len(es) {
		t.Fatalf("read %d entries, want %d", len(got), len(es))
	}
	for i := range es {
		sameEntry(t, es[i], got[i])
	}
	if _, err := trace.Verify(got); err != nil {
		t.Fatalf("read-back log does not verify: %v", err)
	}
	if _, err := trace.VerifyStore(context.Background(), s); err != nil {
		t.Fatalf("VerifyStore: %v", err)
	}
}

func testReadFromMiddle(t *testing.T, newStore NewStore) {
	s := newStore(t)
	es := chain(t, trace.Head{}, 10)
	if err := s.Append(context.Background(), es...); err != nil {
		t.Fatal(err)
	}
	for _, from := range []uint64{0, 1, 5, 9, 10, 11, 1 << 40} {
		got := readAll(t, s, from)
		want := uint64(0)
		if from < 10 {
			want = 10 - from
		}
		if uint64(len(got)) != want {
			t.Fatalf("Entries(%d) yielded %d, want %d", from, len(got), want)
		}
		for i, e := range got {
			sameEntry(t, es[from+uint64(i)], e)
		}
	}
}

func testBatchAppend(t *testing.T, newStore NewStore) {
	s := newStore(t)
	es := chain(t, trace.Head{}, 12)
	if err := s.Append(context.Background(), es[:5]...); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(context.Background(), es[5:]...); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(context.Background()); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
	got := readAll(t, s, 0)
	if len(got) != 12 {
		t.Fatalf("read %d entries, want 12", len(got))
	}
}

func expectConflict(t *testing.T, s trace.Store, want trace.Head, es ...trace.Entry) {
	t.Helper()
	err := s.Append(context.Background(), es...)
	if !errors.Is(err, trace.ErrConflict) {
		t.Fatalf("Append of a non-continuing batch: err = %v, want ErrConflict", err)
	}
	if h := head(t, s); h != want {
		t.Fatalf("rejected append changed the head: %+v, want %+v", h, want)
	}
	if got := readAll(t, s, 0); uint64(len(got)) != want.Size {
		t.Fatalf("rejected append stored entries: %d, want %d", len(got), want.Size)
	}
}

func testRejectsWrongSeq(t *testing.T, newStore NewStore) {
	s := newStore(t)
	es := chain(t, trace.Head{}, 3)
	if err := s.Append(context.Background(), es[0]); err != nil {
		t.Fatal(err)
	}
	h := head(t, s)
	expectConflict(t, s, h, es[2])     // gap
	expectConflict(t, s, h, es[0])     // replay of entry 0
	other := chain(t, trace.Head{}, 1) // a fork at 0 from another writer
	expectConflict(t, s, h, other[0])
}

func testRejectsWrongPrev(t *testing.T, newStore NewStore) {
	s := newStore(t)
	es := chain(t, trace.Head{}, 2)
	if err := s.Append(context.Background(), es[0]); err != nil {
		t.Fatal(err)
	}
	h := head(t, s)
	bad := es[1]
	bad.Prev[0] ^= 1
	expectConflict(t, s, h, bad)
}

func testRejectsBatchAtomically(t *testing.T, newStore NewStore) {
	s := newStore(t)
	es := chain(t, trace.Head{}, 4)
	if err := s.Append(context.Background(), es[0]); err != nil {
		t.Fatal(err)
	}
	h := head(t, s)
	expectConflict(t, s, h, es[1], es[3]) // second entry skips one
}

// unchecked builds the entry that continues h with the given fields, as a
// writer that skips trace.Next would: its hash is right, its fields may
// break the format's rules.
func unchecked(h trace.Head, kind string, payload []byte, at time.Time) trace.Entry {
	e := trace.Entry{Seq: h.Size, Prev: h.Hash, Kind: kind, Payload: payload, Time: at}
	e.Hash = trace.EntryHash(e)
	return e
}

// expectMalformed checks that appending es fails with ErrMalformed and
// stores nothing, alone and after a valid entry in the same batch.
func expectMalformed(t *testing.T, s trace.Store, name string, bad func(trace.Head) trace.Entry) {
	t.Helper()
	h := head(t, s)
	if err := s.Append(context.Background(), bad(h)); !errors.Is(err, trace.ErrMalformed) {
		t.Fatalf("Append of an entry with %s: err = %v, want ErrMalformed", name, err)
	}
	good := chain(t, h, 1)[0]
	next := trace.Head{Size: good.Seq + 1, Hash: good.Hash}
	if err := s.Append(context.Background(), good, bad(next)); !errors.Is(err, trace.ErrMalformed) {
		t.Fatalf("Append of a batch ending with %s: err = %v, want ErrMalformed", name, err)
	}
	if got := head(t, s); got != h {
		t.Fatalf("refused append of %s changed the head: %+v, want %+v", name, got, h)
	}
	if got := readAll(t, s, 0); uint64(len(got)) != h.Size {
		t.Fatalf("refused append of %s stored entries: %d, want %d", name, len(got), h.Size)
	}
}

// testRefusesInvalidPayload: a store holds only payloads trace.ValidPayload
// accepts (canonical JSON of 1 to MaxPayloadLen bytes), what a log file's
// reader accepts, so a log copied from any store to a file reads back.
func testRefusesInvalidPayload(t *testing.T, newStore NewStore) {
	s := newStore(t)
	if err := s.Append(context.Background(), chain(t, trace.Head{}, 1)...); err != nil {
		t.Fatal(err)
	}
	long := make([]byte, trace.MaxPayloadLen+1)
	for i := range long {
		long[i] = 'a'
	}
	long[0], long[len(long)-1] = '"', '"'
	for name, payload := range map[string][]byte{
		"a nil payload":                    nil,
		"an empty payload":                 {},
		"a payload that is not JSON":       []byte(`{"a":`),
		"a payload that is not canonical":  []byte(`{ "a": 1 }`),
		"a payload with unordered keys":    []byte(`{"b":1,"a":2}`),
		"a payload over MaxPayloadLen":     long,
		"a payload with an invalid string": []byte("\"\xff\""),
	} {
		expectMalformed(t, s, name, func(h trace.Head) trace.Entry {
			return unchecked(h, "storetest.payload", payload, base)
		})
	}
	// The shortest valid payload is one byte.
	e := unchecked(head(t, s), "storetest.payload", []byte(`0`), base)
	if err := s.Append(context.Background(), e); err != nil {
		t.Fatalf("Append of the one-byte payload 0: %v", err)
	}
	sameEntry(t, e, readAll(t, s, e.Seq)[0])
}

// testRefusesInvalidKindOrTime: the other field rules of the format hold in
// every store too.
func testRefusesInvalidKindOrTime(t *testing.T, newStore NewStore) {
	s := newStore(t)
	for name, e := range map[string]struct {
		kind string
		at   time.Time
	}{
		"an empty kind":            {"", base},
		"an upper-case kind":       {"Storetest.kind", base},
		"a kind ending with a dot": {"storetest.", base},
		"a kind over MaxKindLen":   {strings.Repeat("k", trace.MaxKindLen+1), base},
		"a time before year 0000":  {"storetest.kind", time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC)},
		"a time after year 9999":   {"storetest.kind", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		expectMalformed(t, s, name, func(h trace.Head) trace.Entry {
			return unchecked(h, e.kind, []byte(`{}`), e.at)
		})
	}
}

func testEntriesAreCopies(t *testing.T, newStore NewStore) {
	s := newStore(t)
	es := chain(t, trace.Head{}, 2)
	if err := s.Append(context.Background(), es...); err != nil {
		t.Fatal(err)
	}
	first := readAll(t, s, 0)
	for i := range first[0].Payload {
		first[0].Payload[i] = 'X'
	}
	again := readAll(t, s, 0)
	sameEntry(t, es[0], again[0])
}

func testEarlyBreak(t *testing.T, newStore NewStore) {
	s := newStore(t)
	if err := s.Append(context.Background(), chain(t, trace.Head{}, 10)...); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range s.Entries(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if n == 3 {
			break
		}
	}
	if n != 3 {
		t.Fatalf("stopped after %d", n)
	}
	// the store stays usable after an abandoned iteration
	if err := s.Append(context.Background(), chain(t, head(t, s), 1)...); err != nil {
		t.Fatalf("append after early break: %v", err)
	}
}

func testLargePayload(t *testing.T, newStore NewStore) {
	s := newStore(t)
	payload := []byte(`{"blob":"` + strings.Repeat("abcdefgh", 1<<17) + `"}`) // 1 MiB
	e, _, err := trace.Next(trace.Head{}, "storetest.large", payload, base)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, s, 0)
	if len(got) != 1 {
		t.Fatalf("read %d entries", len(got))
	}
	sameEntry(t, e, got[0])
}

func testConcurrentLogs(t *testing.T, newStore NewStore) {
	s := newStore(t)
	const logs, writers, each = 2, 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, logs*writers)
	for l := 0; l < logs; l++ {
		lg, err := trace.NewLog(s, trace.WithConflictRetries(10000))
		if err != nil {
			t.Fatal(err)
		}
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(l, w int) {
				defer wg.Done()
				for i := 0; i < each; i++ {
					payload := fmt.Sprintf(`{"log":%d,"writer":%d,"i":%d}`, l, w, i)
					if _, err := lg.Append(context.Background(), "storetest.concurrent", []byte(payload)); err != nil {
						errs <- err
						return
					}
				}
			}(l, w)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent append: %v", err)
	}
	h, err := trace.VerifyStore(context.Background(), s)
	if err != nil {
		t.Fatalf("log forked or broke under concurrent writers: %v", err)
	}
	if h.Size != logs*writers*each {
		t.Fatalf("log has %d entries, want %d", h.Size, logs*writers*each)
	}
}

func testClosed(t *testing.T, newStore NewStore) {
	s := newStore(t)
	es := chain(t, trace.Head{}, 2)
	if err := s.Append(context.Background(), es[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// es[1] continues the head, so only the Close can make it fail.
	if err := s.Append(context.Background(), es[1]); !errors.Is(err, trace.ErrClosed) {
		t.Fatalf("Append after Close: err = %v, want ErrClosed", err)
	}
	if _, err := s.Head(context.Background()); !errors.Is(err, trace.ErrClosed) {
		t.Fatalf("Head after Close: err = %v, want ErrClosed", err)
	}
}
