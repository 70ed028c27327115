package sqlstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// TestEmptyPayloadRefused: an empty payload is refused, as every store
// refuses it (it is not JSON, and a log file's reader refuses it), in each
// of the Store's three write paths: the first entry's transaction, the
// one-statement append and a batch. The shortest payload there is, one
// byte, is stored exactly in each of them (a short payload is bound as a
// blob, never as NULL, which the NOT NULL column would refuse).
func TestEmptyPayloadRefused(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		_, s := openLog(t, b)
		h := trace.Head{}
		entry := func(at trace.Head, payload []byte) trace.Entry {
			e := trace.Entry{Seq: at.Size, Prev: at.Hash, Kind: "sqlstore.payload", Payload: payload}
			e.Hash = trace.EntryHash(e)
			return e
		}
		var want []trace.Entry
		add := func(payload []byte) trace.Entry {
			e := entry(h, payload)
			h = trace.Head{Size: e.Seq + 1, Hash: e.Hash}
			want = append(want, e)
			return e
		}
		for _, empty := range [][]byte{nil, {}} {
			require.ErrorIs(t, s.Append(ctx, entry(h, empty)), trace.ErrMalformed, "first entry")
		}
		require.NoError(t, s.Append(ctx, add([]byte(`0`)))) // first entry: the transaction path
		for _, empty := range [][]byte{nil, {}} {
			require.ErrorIs(t, s.Append(ctx, entry(h, empty)), trace.ErrMalformed, "one entry")
			one := entry(h, []byte(`1`))
			next := trace.Head{Size: one.Seq + 1, Hash: one.Hash}
			require.ErrorIs(t, s.Append(ctx, one, entry(next, empty)), trace.ErrMalformed, "batch")
		}
		require.NoError(t, s.Append(ctx, add([]byte(`1`))))                   // one entry: the one-statement path
		require.NoError(t, s.Append(ctx, add([]byte(`2`)), add([]byte(`3`)))) // a batch
		got := readAll(t, s)
		require.Len(t, got, len(want))
		for i := range want {
			require.Equal(t, want[i].Hash, got[i].Hash)
			require.Equal(t, string(want[i].Payload), string(got[i].Payload))
		}
		_, err := trace.VerifyStoreAgainst(ctx, s, h)
		require.NoError(t, err)
	})
}

// TestReaderRefusesWhatAppendRefuses writes rows around the store, straight
// into the table, with fields Append refuses (a payload that is empty, not
// JSON or not canonical, a kind outside the grammar): reading them back is
// trace.ErrCorrupt naming the entry, so the store reads back only what its
// Append could have written.
func TestReaderRefusesWhatAppendRefuses(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		for name, bad := range map[string]struct {
			kind    string
			payload []byte
		}{
			"empty payload":         {"sqlstore.row", []byte{}},
			"payload not JSON":      {"sqlstore.row", []byte(`{"a":`)},
			"payload not canonical": {"sqlstore.row", []byte(`{ "a": 1 }`)},
			"kind upper case":       {"Sqlstore.Row", []byte(`{}`)},
		} {
			db, s := openLog(t, b)
			e := trace.Entry{Kind: bad.kind, Payload: bad.payload}
			e.Hash = trace.EntryHash(e)
			_, err := db.ExecContext(ctx, b.Rebind("INSERT INTO "+sqlstore.EntriesTable+
				" (log_id, seq, prev, kind, payload, time, hash) VALUES (?, ?, ?, ?, ?, ?, ?)"),
				s.ID(), int64(0), e.Prev[:], e.Kind, e.Payload, trace.FormatTime(e.Time), e.Hash[:])
			require.NoError(t, err, name)
			var readErr error
			for _, err := range s.Entries(ctx, 0) {
				readErr = err
			}
			require.ErrorIs(t, readErr, trace.ErrCorrupt, name)
			require.Contains(t, readErr.Error(), "entry 0", name)
			require.Equal(t, 1, strings.Count(readErr.Error(), "trace: "), "%s: %v", name, readErr)
		}
	})
}

// TestErrorsPrefixedOnce walks the package's error-producing paths and
// checks that each message names its origin once: "sqlstore: " for the
// package's own errors, "trace: " for the trace.Store contract's (conflict,
// malformed entry, closed store, corrupt row), never both, never twice.
func TestErrorsPrefixedOnce(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db, logs := open(t, b)
		var errs []error
		add := func(err error) {
			t.Helper()
			require.Error(t, err)
			errs = append(errs, err)
		}
		second := func(_ any, err error) error { return err }

		add(second(sqlstore.Open(ctx, db, "mysql")))
		add(second(sqlstore.Open(ctx, nil, b.Dialect)))
		add(second(logs.Create(ctx, "")))
		add(second(logs.Open(ctx, "nul\x00")))
		add(second(logs.Open(ctx, newID())))
		s, err := logs.Create(ctx, newID())
		require.NoError(t, err)
		add(second(logs.Create(ctx, s.ID())))
		es := entries(t, trace.Head{}, 3, "a")
		add(s.Append(ctx, es[1]))
		require.NoError(t, s.Append(ctx, es[0]))
		add(s.Append(ctx, es[0]))
		add(s.Append(ctx, es[2]))
		add(s.Append(ctx, es[1], es[0]))
		bad := trace.Entry{Seq: 1, Prev: es[0].Hash, Kind: "a", Payload: []byte(`{ }`)}
		add(s.Append(ctx, bad))
		bad.Kind = "A"
		add(s.Append(ctx, bad))

		row, err := logs.Create(ctx, newID())
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, b.Rebind("INSERT INTO "+sqlstore.EntriesTable+
			" (log_id, seq, prev, kind, payload, time, hash) VALUES (?, ?, ?, ?, ?, ?, ?)"),
			row.ID(), int64(0), es[0].Prev[:], "a", []byte(`{ }`), "not a time", es[0].Hash[:])
		require.NoError(t, err)
		for _, err := range row.Entries(ctx, 0) {
			add(err)
		}
		_, err = db.ExecContext(ctx, b.Rebind("UPDATE "+sqlstore.EntriesTable+" SET time = ? WHERE log_id = ?"),
			trace.FormatTime(es[0].Time), row.ID())
		require.NoError(t, err)
		for _, err := range row.Entries(ctx, 0) {
			add(err)
		}

		require.NoError(t, s.Close())
		add(s.Close())
		add(s.Append(ctx, es[1]))
		add(second(s.Head(ctx)))

		for _, err := range errs {
			msg := err.Error()
			own, contract := strings.Count(msg, "sqlstore: "), strings.Count(msg, "trace: ")
			require.True(t, strings.HasPrefix(msg, "sqlstore: ") || strings.HasPrefix(msg, "trace: "), "no prefix: %s", msg)
			require.Equal(t, 1, own+contract, "prefix repeated: %s", msg)
		}
	})
}
