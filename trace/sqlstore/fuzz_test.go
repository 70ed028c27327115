package sqlstore

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/verity-go/verity/trace"
)

// FuzzDecodeRow feeds arbitrary column values to the row decoder: it must
// never panic, must accept exactly the rows whose fields have the stored
// shapes and follow the writer's field rules (trace.ValidFields), and what
// it accepts must be the entry those columns describe.
func FuzzDecodeRow(f *testing.F) {
	e, _, err := trace.Next(trace.Head{}, "fuzz.seed", []byte(`{"a":1}`), time.Date(2026, 11, 22, 6, 0, 0, 1, time.UTC))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(int64(0), e.Prev[:], e.Kind, e.Payload, trace.FormatTime(e.Time), e.Hash[:])
	f.Add(int64(-1), e.Prev[:], e.Kind, e.Payload, trace.FormatTime(e.Time), e.Hash[:])
	f.Add(int64(7), e.Prev[:31], e.Kind, []byte(nil), "2026-11-22T06:00:00Z", e.Hash[:])
	f.Add(int64(1), e.Prev[:], "", []byte{}, "9999-12-31T23:59:59.999999999Z", append(e.Hash[:], 0))
	f.Add(int64(2), e.Prev[:], e.Kind, []byte(`{ "a": 1 }`), trace.FormatTime(e.Time), e.Hash[:])
	f.Add(int64(3), e.Prev[:], "Bad.Kind", e.Payload, trace.FormatTime(e.Time), e.Hash[:])
	f.Fuzz(func(t *testing.T, seq int64, prev []byte, kind string, payload []byte, ts string, hash []byte) {
		got, err := decodeRow(seq, prev, kind, bytes.Clone(payload), []byte(ts), hash)
		at, terr := trace.ParseTime(ts)
		wantOK := seq >= 0 && len(prev) == 32 && len(hash) == 32 && terr == nil &&
			trace.ValidFields(trace.Entry{Kind: kind, Payload: payload, Time: at}) == nil
		if (err == nil) != wantOK {
			t.Fatalf("decodeRow error = %v, want ok = %v", err, wantOK)
		}
		if err != nil {
			return
		}
		if got.Seq != uint64(seq) || !bytes.Equal(got.Prev[:], prev) || !bytes.Equal(got.Hash[:], hash) ||
			got.Kind != kind || !bytes.Equal(got.Payload, payload) || trace.FormatTime(got.Time) != ts {
			t.Fatalf("decoded %+v from different columns", got)
		}
	})
}

// FuzzParseWireTime checks the allocation-free time decoder against
// trace.ParseTime: the same strings accepted, the same instants returned.
func FuzzParseWireTime(f *testing.F) {
	for _, s := range []string{
		"2026-11-22T06:00:00.000000001Z", "0000-01-01T00:00:00.000000000Z", "9999-12-31T23:59:59.999999999Z",
		"2024-02-29T12:00:00.000000000Z", "2023-02-29T12:00:00.000000000Z", "2026-13-01T00:00:00.000000000Z",
		"2026-11-22T24:00:00.000000000Z", "2026-11-22T06:60:00.000000000Z", "2026-11-22T06:00:60.000000000Z",
		"2026-11-22T06:00:00Z", "2026-11-22 06:00:00.000000000Z", "+026-11-22T06:00:00.000000000Z",
		"2026-04-31T00:00:00.000000000Z", "2026-00-10T00:00:00.000000000Z", "2026-11-00T00:00:00.000000000Z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseWireTime([]byte(s))
		want, err := trace.ParseTime(s)
		if ok != (err == nil) {
			t.Fatalf("parseWireTime(%q) ok = %v, trace.ParseTime error = %v", s, ok, err)
		}
		if ok && (!got.Equal(want) || got.Location() != time.UTC || trace.FormatTime(got) != s) {
			t.Fatalf("parseWireTime(%q) = %v, trace.ParseTime = %v", s, got, want)
		}
	})
}

// FuzzValidID: validID never panics and accepts exactly 1..MaxIDLen bytes
// of valid UTF-8 without NUL.
func FuzzValidID(f *testing.F) {
	for _, s := range []string{"", "a", "session-1", "é", "\x00", "\xff", strings.Repeat("x", MaxIDLen), strings.Repeat("x", MaxIDLen+1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := validID(id)
		want := len(id) >= 1 && len(id) <= MaxIDLen && utf8.ValidString(id) && !strings.ContainsRune(id, 0)
		if (err == nil) != want {
			t.Fatalf("validID(%q) = %v, want ok = %v", id, err, want)
		}
	})
}

func TestSchemaVersionTraceIsStepCount(t *testing.T) {
	if got := int64(len(traceMigration.Steps)); got != SchemaVersionTrace {
		t.Fatalf("SchemaVersionTrace = %d, migration has %d steps", SchemaVersionTrace, got)
	}
}
