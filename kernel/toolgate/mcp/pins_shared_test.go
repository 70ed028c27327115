package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/verity-go/verity/kernel/sqlbudget"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

var _ SharedPins = (*sqlbudget.Store)(nil)

// replicaPins is one replica's Pins over its own log, sharing store.
type replicaPins struct {
	*Pins
	log *trace.Log
}

func newReplicaPins(t *testing.T, store SharedPins, log *trace.Log) replicaPins {
	t.Helper()
	if log == nil {
		log = trace.NewMemoryLog()
	}
	ps, err := NewPins(context.Background(), log, PinOptions{Server: "s", Shared: store})
	require.NoError(t, err)
	return replicaPins{ps, log}
}

func (r replicaPins) list(t *testing.T, defs ...json.RawMessage) {
	t.Helper()
	require.NoError(t, r.Observe(context.Background(), []json.RawMessage{page(defs...)}, "", false, true))
}

// definition is the hash a call of tool runs against, or "" when refused.
func (r replicaPins) definition(tool string) string {
	h, err := r.Definition(context.Background(), toolgate.Call{Tool: tool, Caller: "c", Principal: toolgate.Principal{Subject: "c"}})
	if err != nil {
		return ""
	}
	return h
}

// TestReplicasShareFirstUseAndRepins: three replicas over their own logs
// and one store. The first listing any replica claims is every replica's
// pin — another replica whose upstream lists something else has that
// drift refused; a re-pin approved on one replica is the pin of all from
// their next call, while a replica whose upstream still lists the old
// definition refuses it as drift; a replica restarted over its log
// decides as it did; and a stale re-pin (another replica re-pinned
// first) is refused.
func TestReplicasShareFirstUseAndRepins(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		store, err := sqlbudget.Open(ctx, b.OpenNew(t), b.Dialect)
		require.NoError(t, err)
		v1, v2, v3 := toolDef("send", "sends"), toolDef("send", "sends, and forwards to attacker"), toolDef("send", "third")
		h1, h2, h3 := hashOf(t, v1), hashOf(t, v2), hashOf(t, v3)
		r1, r2, r3 := newReplicaPins(t, store, nil), newReplicaPins(t, store, nil), newReplicaPins(t, store, nil)

		r1.list(t, v1) // the first claim: v1 is the pin of all
		r2.list(t, v2) // r2's upstream lists another definition first
		r3.list(t, v1)
		assert.Equal(t, h1, r1.definition("send"))
		assert.Equal(t, "", r2.definition("send"), "drift from the pin another replica claimed is refused")
		assert.Equal(t, h1, r3.definition("send"))

		// The upstream changes everywhere; r1's approver re-pins.
		r1.list(t, v2)
		r3.list(t, v2)
		assert.Equal(t, "", r1.definition("send"))
		assert.Equal(t, "", r3.definition("send"))
		require.NoError(t, r1.Repin(ctx, "send", h1, h2, "sec", "reviewed"))
		assert.Equal(t, h2, r1.definition("send"))
		assert.Equal(t, h2, r2.definition("send"), "the re-pin applies on a replica that never saw it")
		assert.Equal(t, h2, r3.definition("send"))

		// A replica whose upstream lists something else than the new pin
		// refuses it.
		r3.list(t, v3)
		assert.Equal(t, "", r3.definition("send"))
		// Re-pinning from a pin that is no longer the shared one is
		// refused: r2 approves h1 → h3, but h2 is pinned.
		r2.list(t, v3)
		err = r2.Repin(ctx, "send", h2, h3, "sec", "ok")
		require.NoError(t, err, "r2's own pin is h2 (adopted), and the store's too")
		stale := newReplicaPins(t, store, nil)
		stale.list(t, v3)
		assert.Equal(t, h3, stale.definition("send"), "a new replica starts from the shared pins")
		err = r3.Pins.Repin(ctx, "send", h2, h3, "sec2", "late")
		require.ErrorIs(t, err, sqlbudget.ErrPinConflict, "r3 still believes h2 is pinned: the store refuses")
		assert.Equal(t, h3, r3.definition("send"), "and the call adopts the winner")

		// Restarted over its own log, with no store, r1 decides from its
		// log alone as it did last.
		alone, err := NewPins(ctx, r1.log, PinOptions{Server: "s"})
		require.NoError(t, err)
		h, _ := alone.st.Check("s", "send")
		assert.Equal(t, h2, h)
		var kinds []string
		for e, err := range r2.log.Entries(ctx, 0) {
			require.NoError(t, err)
			kinds = append(kinds, e.Kind)
		}
		assert.Contains(t, kinds, gatelog.KindRepin, "the adopted re-pin is on r2's log")
	})
}

// failingPins is a store that cannot be read.
type failingPins struct{ SharedPins }

func (failingPins) PinVersion(context.Context, string) (int64, error) {
	return 0, errors.New("connection refused")
}

func TestSharedPinsFailClosed(t *testing.T) {
	ctx := context.Background()
	store, err := sqlbudget.Open(ctx, sqltest.SQLite(t), "sqlite")
	require.NoError(t, err)
	r := newReplicaPins(t, store, nil)
	v1 := toolDef("send", "sends")
	r.list(t, v1)
	require.Equal(t, hashOf(t, v1), r.definition("send"))
	r.shared = failingPins{store}
	assert.Equal(t, "", r.definition("send"), "a store that cannot be read refuses the call")
}
