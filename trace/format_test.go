package trace

// This file checks that a log file's reader and writer agree; the
// language-neutral test vectors (vectors_test.go, FORMAT.md §7) pin the
// same rules for readers in other languages.
//
//   - The reader holds what the writer holds: a record opens if and only if
//     the writer accepts its fields (TestFileReaderAcceptsExactlyWhatTheWriterWrites,
//     FuzzOpenFile in trace_test.go), and File.Append refuses what a reopen
//     would refuse (TestFileAppendWritesWhatOpenReads,
//     TestFileOpenRefusesOversizePayload).
//   - Record lengths outside the format's bounds are refused
//     (TestFileRecordLengthBounds); a file without the magic is a
//     *NotLogError (TestFileOpenRejectsNotALog).
//   - A Verifier applies every rule the reader applies: the field rules
//     (TestVerifierChecksFieldRules), so Verify accepts an entry exactly
//     when OpenFile accepts its record
//     (TestFileReaderAcceptsExactlyWhatTheWriterWrites).
//   - Every store refuses to append what the reader refuses: storetest
//     RefusesInvalidPayload and RefusesInvalidKindOrTime, run on Memory and
//     File by conformance_test.go and on the SQL stores by trace/sqlstore.
//   - The vectors: TestVectors checks OpenFile against each outcome,
//     TestVectorsUpToDate that they are what the generator writes, and
//     TestVectorsWriterAgrees that the writer writes the valid ones.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// faultFSWith is a file system holding one durable file, "log", with data.
func faultFSWith(data []byte) *faultFS {
	fs := newFaultFS()
	fs.files["log"] = &faultFile{data: bytes.Clone(data), durable: bytes.Clone(data), dirDurable: true}
	return fs
}

// openBytes opens a log file holding data (in memory) and returns the
// error of OpenFile.
func openBytes(data []byte) error {
	s, err := OpenFile("log", FileOptions{fs: faultFSWith(data)})
	if err == nil {
		s.Close()
	}
	return err
}

// TestFileOpenRefusesOversizePayload: a record whose payload is longer than
// MaxPayloadLen fits the record-length limit when its kind is short, so
// the reader must check the payload's own length, as the writer does.
func TestFileOpenRefusesOversizePayload(t *testing.T) {
	huge := `"` + strings.Repeat("x", MaxPayloadLen-1) + `"` // canonical JSON, one byte over
	steps := buildLog(stepEntries, nil)
	big, _ := vecRecord{seq: 1, prev: steps.hashes[0], kind: "a", time: stepEntries[1].time, payload: huge}.frame()
	require.LessOrEqual(t, int64(len(big)-frameHeaderLen), maxBodyLen, "the record length alone does not rule it out")

	var torn *TornTailError
	require.ErrorAs(t, openBytes(withFrames(steps.frames[0], big)), &torn, "as the final record")
	assert.Equal(t, uint64(1), torn.Index)

	next, _ := vecRecord{seq: 2, prev: Hash(big[len(big)-32:]), kind: "a", time: stepEntries[2].time, payload: "1"}.frame()
	var ce *CorruptRecordError
	require.ErrorAs(t, openBytes(withFrames(steps.frames[0], big, next)), &ce, "before another record")
	assert.Equal(t, uint64(1), ce.Index)
}

// TestFileOpenRejectsNotALog: a file that does not begin with the magic
// (or a prefix of it) is reported as not a trace log, and RepairFile
// leaves it alone.
func TestFileOpenRejectsNotALog(t *testing.T) {
	for _, data := range [][]byte{[]byte("VTRACE2\n"), []byte("hello"), make([]byte, 20), []byte("VTRACE1\r\n")} {
		fs := faultFSWith(data)
		_, err := OpenFile("log", FileOptions{fs: fs})
		var nl *NotLogError
		require.ErrorAs(t, err, &nl, "%q", data)
		assert.ErrorIs(t, err, ErrNotLog)
		assert.ErrorIs(t, err, ErrCorrupt, "never repaired, like a corrupt record")
		_, err = repairFile("log", fs)
		require.ErrorIs(t, err, ErrNotLog)
		assert.Equal(t, data, fs.bytes("log"))
	}
	for _, n := range []int{1, 7} { // a prefix of the magic is a torn header
		assert.ErrorIs(t, openBytes([]byte(fileMagic[:n])), ErrTornTail)
	}
}

// TestFileRecordLengthBounds: the shortest record the writer can write has
// a 112-byte body (one-byte kind, one-byte payload); a CRC-valid length
// below that is corrupt, even for the final record, where a shorter body
// used to read as a torn tail.
func TestFileRecordLengthBounds(t *testing.T) {
	e, _, err := Next(Head{}, "a", []byte(`0`), t0)
	require.NoError(t, err)
	assert.Equal(t, int64(112), int64(len(appendFrame(nil, e))-frameHeaderLen))
	assert.Equal(t, int64(112), minBodyLen)
	assert.Equal(t, int64(16777454), maxBodyLen)

	short, _ := vecRecord{kind: "a", time: FormatTime(t0)}.frame() // empty payload: 111 bytes
	var ce *CorruptRecordError
	require.ErrorAs(t, openBytes(withFrames(short)), &ce)
	assert.Equal(t, uint64(0), ce.Index)
}

// TestCheckRecordErrorsWrapSentinels: each way a record fails the reader's
// check (FORMAT.md §4, step 5) wraps its own sentinel: a field rule
// ErrMalformed, a stored hash its fields do not hash to ErrCorrupt, an
// intact record that does not link a *ChainBreakError.
func TestCheckRecordErrorsWrapSentinels(t *testing.T) {
	pre := func(frame []byte) []byte { return append([]byte{entryTag}, frame[frameHeaderLen:]...) }
	good, _ := vecRecord{kind: "test.step", time: stepEntries[0].time, payload: `{"i":0}`}.frame()
	_, err := checkRecord(pre(good), Head{})
	require.NoError(t, err)

	badHash := pre(good)
	badHash[len(badHash)-1] ^= 1
	_, err = checkRecord(badHash, Head{})
	require.ErrorIs(t, err, ErrCorrupt)
	assert.NotErrorIs(t, err, ErrMalformed)
	assert.NotErrorIs(t, err, ErrChainBreak)

	badKind, _ := vecRecord{kind: "Test", time: stepEntries[0].time, payload: `{"i":0}`}.frame()
	_, err = checkRecord(pre(badKind), Head{})
	require.ErrorIs(t, err, ErrMalformed)

	unlinked, _ := vecRecord{seq: 1, kind: "test.step", time: stepEntries[0].time, payload: `{"i":0}`}.frame()
	_, err = checkRecord(pre(unlinked), Head{})
	var cb *ChainBreakError
	require.ErrorAs(t, err, &cb)
}

// outOfRangeTimes are instants the wire form's four-digit year cannot
// hold: every time.Time the writer refuses.
var outOfRangeTimes = []time.Time{
	minTime.Add(-time.Nanosecond),
	time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC),
	maxTime,
	time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC),
}

// badFieldEntries are entries with a correct hash and one field that breaks
// a rule of FORMAT.md §1, named by that field.
func badFieldEntries(t *testing.T) map[string][]Entry {
	good := buildChain(t, 1)[0]
	out := map[string][]Entry{}
	add := func(field string, e Entry) {
		e.Hash = EntryHash(e)
		out[field] = append(out[field], e)
	}
	for _, k := range badKinds {
		e := good
		e.Kind = k.kind
		add("kind", e)
	}
	for _, at := range outOfRangeTimes {
		e := good
		e.Time = at
		add("time", e)
	}
	for _, p := range append(badPayloads, struct{ name, payload string }{"over-limit", `"` + strings.Repeat("x", MaxPayloadLen-1) + `"`}) {
		e := good
		e.Payload = []byte(p.payload)
		add("payload", e)
	}
	return out
}

// TestVerifierChecksFieldRules: Verify, and VerifyStore over a store that
// does not check fields itself, refuse what a log file's reader refuses,
// even when the entry's hash is right: a bad kind, a time outside years
// 0000-9999, a payload that is empty, not JSON, not canonical or over
// MaxPayloadLen. The *ChainBreakError names the field.
func TestVerifierChecksFieldRules(t *testing.T) {
	for field, entries := range badFieldEntries(t) {
		for _, e := range entries {
			_, err := Verify([]Entry{e})
			var cb *ChainBreakError
			require.ErrorAs(t, err, &cb, "%s %q %v %.40q", field, e.Kind, e.Time, e.Payload)
			assert.Equal(t, field, cb.Field)
			assert.Equal(t, uint64(0), cb.Index)

			_, err = VerifyStore(context.Background(), uncheckedStore{e})
			require.ErrorAs(t, err, &cb, "VerifyStore: %s %q %v %.40q", field, e.Kind, e.Time, e.Payload)
			assert.Equal(t, field, cb.Field)
		}
	}
}

// uncheckedStore is a Store that hands out its entries as they are, as a
// store written outside the library might.
type uncheckedStore []Entry

func (s uncheckedStore) Head(context.Context) (Head, error)     { return Head{}, nil }
func (s uncheckedStore) Append(context.Context, ...Entry) error { return nil }
func (s uncheckedStore) Close() error                           { return nil }
func (s uncheckedStore) Entries(_ context.Context, from uint64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		for _, e := range s[min(from, uint64(len(s))):] {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// refParseTime is the reference definition of the wire form of a time:
// what time.Parse accepts with the wire layout and FormatTime writes back
// unchanged.
func refParseTime(s string) (time.Time, bool) {
	if len(s) != timeLen || s[len(s)-1] != 'Z' {
		return time.Time{}, false
	}
	t, err := time.Parse("2006-01-02T15:04:05.000000000Z", s)
	if err != nil || FormatTime(t) != s {
		return time.Time{}, false
	}
	return t, true
}

// FuzzParseTime: ParseTime accepts exactly the strings the reference
// definition accepts, and returns the same instant.
func FuzzParseTime(f *testing.F) {
	f.Add("2026-01-02T03:04:05.000000006Z")
	f.Add("0000-02-29T00:00:00.000000000Z")
	f.Add("9999-12-31T23:59:59.999999999Z")
	for _, c := range badTimes {
		f.Add(c.time)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, ok := refParseTime(s)
		got, err := ParseTime(s)
		if ok != (err == nil) {
			t.Fatalf("ParseTime(%q) error %v, reference accepts: %v", s, err, ok)
		}
		if ok && !got.Equal(want) {
			t.Fatalf("ParseTime(%q) = %v, reference %v", s, got, want)
		}
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("ParseTime(%q): %v does not wrap ErrMalformed", s, err)
		}
	})
}

// TestFileReaderAcceptsExactlyWhatTheWriterWrites: for any kind, time and
// payload, a record with a correct hash opens if and only if the writer
// (Next) accepts those fields, and if and only if Verify accepts the entry
// it holds; the writer then writes that record byte for byte.
func TestFileReaderAcceptsExactlyWhatTheWriterWrites(t *testing.T) {
	kinds := []string{"a", "kernel.execute", strings.Repeat("k", MaxKindLen), strings.Repeat("k", MaxKindLen+1)}
	for _, k := range badKinds {
		kinds = append(kinds, k.kind)
	}
	payloads := []string{`0`, `{}`, `[]`, `"é"`, `{"a":[1,2,{"b":null}]}`}
	for _, p := range badPayloads {
		payloads = append(payloads, p.payload)
	}
	rapid.Check(t, func(t *rapid.T) {
		kind := rapid.OneOf(rapid.SampledFrom(kinds), rapid.StringMatching(`[a-z0-9_.A-]{0,6}`)).Draw(t, "kind")
		at := time.Unix(rapid.Int64Range(-62167219200-86400, 253402300800+86400).Draw(t, "sec"),
			rapid.Int64Range(0, 999999999).Draw(t, "nsec")).UTC()
		tm := FormatTime(at)
		if rapid.Bool().Draw(t, "perturb time") {
			b := []byte(tm)
			b[rapid.IntRange(0, timeLen-1).Draw(t, "at")] = rapid.SampledFrom([]byte("0123456789-:.TZz +")).Draw(t, "byte")
			tm = string(b)
		}
		payload := rapid.OneOf(rapid.SampledFrom(payloads), rapid.StringMatching(`[\[\]{}":,0-9a ]{0,8}`)).Draw(t, "payload")

		frame, hash := vecRecord{kind: kind, time: tm, payload: payload}.frame()
		readErr := openBytes(withFrames(frame))
		parsed, timeOK := refParseTime(tm)
		var writeErr error = ErrMalformed
		var e Entry
		if timeOK {
			e, _, writeErr = Next(Head{}, kind, []byte(payload), parsed)
			_, verifyErr := Verify([]Entry{{Kind: kind, Time: parsed, Payload: []byte(payload), Hash: hash}})
			if (readErr == nil) != (verifyErr == nil) {
				t.Fatalf("kind %q time %q payload %q: reader says %v, Verify says %v", kind, tm, payload, readErr, verifyErr)
			}
		}
		if (readErr == nil) != (writeErr == nil) {
			t.Fatalf("kind %q time %q payload %q: reader says %v, writer says %v", kind, tm, payload, readErr, writeErr)
		}
		if writeErr == nil && !bytes.Equal(appendFrame(nil, e), frame) {
			t.Fatalf("the writer encodes kind %q time %q payload %q differently", kind, tm, payload)
		}
		// a final record that breaks a field rule is torn; one whose length
		// is out of range is corrupt
		if short := int64(len(frame)-frameHeaderLen) < minBodyLen; readErr != nil && !errors.Is(readErr, ErrTornTail) && !(short && errors.Is(readErr, ErrCorrupt)) {
			t.Fatalf("kind %q time %q payload %q: %v", kind, tm, payload, readErr)
		}
	})
}

// TestFileAppendWritesWhatOpenReads: File.Append refuses exactly the
// entries a reopen would not read back. Every entry with a kind, time or
// payload that breaks a field rule, written as a record anyway, is refused
// by the reader (or, for a time outside years 0000-9999, read back as
// another instant), and Append refuses it with ErrMalformed and writes
// nothing; entries at the limits of every rule are written and read back
// unchanged.
func TestFileAppendWritesWhatOpenReads(t *testing.T) {
	ctx := context.Background()
	fs := newFaultFS()
	s, err := OpenFile("log", FileOptions{fs: fs})
	require.NoError(t, err)
	for field, entries := range badFieldEntries(t) {
		for _, e := range entries {
			what := fmt.Sprintf("%s: kind %q time %v payload %.40q", field, e.Kind, e.Time, e.Payload)
			if got, err := readEntries(withFrames(appendFrame(nil, e))); err == nil {
				assert.False(t, sameEntry(got[0], e), "%s: written anyway, it reads back unchanged", what)
			}
			require.ErrorIs(t, s.Append(ctx, e), ErrMalformed, what)
			require.Equal(t, []byte(fileMagic), fs.bytes("log"), "%s: nothing written", what)
		}
	}

	var want []Entry
	var h Head
	for _, c := range []struct {
		kind    string
		at      time.Time
		payload string
	}{
		{strings.Repeat("k", MaxKindLen), minTime, `0`},
		{"a.b-c_d.0", maxTime.Add(-time.Nanosecond), `"` + strings.Repeat("x", MaxPayloadLen-2) + `"`},
		{"a", time.Date(0, 2, 29, 0, 0, 0, 0, time.UTC), `{"a":[1.5,null,"\u001f"]}`},
	} {
		e, next, err := Next(h, c.kind, []byte(c.payload), c.at)
		require.NoError(t, err)
		require.NoError(t, s.Append(ctx, e))
		want, h = append(want, e), next
	}
	require.NoError(t, s.Close())
	got, err := readEntries(fs.bytes("log"))
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for i := range want {
		assert.True(t, sameEntry(got[i], want[i]), "entry %d reads back changed", i)
	}
}

// readEntries opens a log file holding data (in memory) and returns its
// entries.
func readEntries(data []byte) ([]Entry, error) {
	s, err := OpenFile("log", FileOptions{fs: faultFSWith(data)})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var out []Entry
	for e, err := range s.Entries(context.Background(), 0) {
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// sameEntry reports whether a and b hold the same fields and the same
// instant.
func sameEntry(a, b Entry) bool {
	return a.Seq == b.Seq && a.Prev == b.Prev && a.Kind == b.Kind && a.Time.Equal(b.Time) &&
		bytes.Equal(a.Payload, b.Payload) && a.Hash == b.Hash
}
