package sqlstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// TestEmptyPayloadStored: the Store contract asks for every field to be
// stored exactly, and an entry with an empty payload is a valid entry (its
// hash covers the zero length); trace.Memory and trace.File keep it. The
// payload column is NOT NULL, so an empty payload must be bound as an
// empty blob, not as NULL, in both the one-statement and the batch path.
func TestEmptyPayloadStored(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		_, s := openLog(t, b)
		var want []trace.Entry
		h := trace.Head{}
		add := func(payload []byte) trace.Entry {
			e := trace.Entry{Seq: h.Size, Prev: h.Hash, Kind: "sqlstore.empty", Payload: payload}
			e.Hash = trace.EntryHash(e)
			h = trace.Head{Size: e.Seq + 1, Hash: e.Hash}
			want = append(want, e)
			return e
		}
		require.NoError(t, s.Append(ctx, add(nil)))                   // first entry: the transaction path
		require.NoError(t, s.Append(ctx, add([]byte{})))              // one entry: the one-statement path
		require.NoError(t, s.Append(ctx, add(nil), add([]byte(`1`)))) // a batch
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
