// The shared pins' guarantees, on PostgreSQL (when VERITY_PG_DSN is set)
// and on a SQLite file:
//
//   - However many replicas claim a server's first-use pins at once,
//     through several pools, one claim wins and every claimant gets it:
//     TestPinClaimHasOneWinner.
//   - A re-pin is a compare and set on the pin its approver saw: of two
//     re-pins from one pin, one is recorded and the other refused with
//     ErrPinConflict, recording nothing; each re-pin raises the version;
//     a new tool is re-pinned from none once; invalid pins are refused:
//     TestRecordRepinRules.

package sqlbudget_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/sqlbudget"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

func hash(c string) string { return "sha256:" + strings.Repeat(c, 64) }

func TestPinClaimHasOneWinner(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		dsn := b.NewDSN(t)
		stores := make([]*sqlbudget.Store, 3)
		for i := range stores {
			_, stores[i] = budgets(t, b, dsn)
		}
		server := "srv-" + uuid.NewString()
		const n = 12
		got := make([]gatelog.Pin, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				first := gatelog.Pin{Server: server, Source: "first_use", Tools: map[string]string{"send": hash(fmt.Sprintf("%x", i%16))}}
				p, repins, v, err := stores[i%len(stores)].ClaimPins(ctx, first)
				assert.NoError(t, err)
				assert.Empty(t, repins)
				assert.EqualValues(t, 1, v)
				got[i] = p
			})
		}
		wg.Wait()
		for i := range n {
			assert.Equal(t, got[0], got[i], "claimant %d got another claim's pins", i)
		}
		p, _, v, ok, err := stores[0].LoadPins(ctx, server)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.EqualValues(t, 1, v)
		assert.Equal(t, got[0], p)
	})
}

func TestRecordRepinRules(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		_, bs := budgets(t, b, b.NewDSN(t))
		v, err := bs.PinVersion(ctx, "s")
		require.NoError(t, err)
		assert.Zero(t, v, "no pins yet")
		_, err = bs.RecordRepin(ctx, gatelog.Repin{Server: "s", Tool: "send", Old: hash("a"), New: hash("b"), Approver: "sec", Reason: "r"})
		require.Error(t, err, "a server nobody claimed has nothing to re-pin")

		_, _, _, err = bs.ClaimPins(ctx, gatelog.Pin{Server: "s", Source: "first_use", Tools: map[string]string{"send": hash("a")}})
		require.NoError(t, err)
		// Two approvals from the same pin: one wins.
		v, err = bs.RecordRepin(ctx, gatelog.Repin{Server: "s", Tool: "send", Old: hash("a"), New: hash("b"), Approver: "sec", RequestedBy: "bob", Reason: "r1"})
		require.NoError(t, err)
		assert.EqualValues(t, 2, v)
		_, err = bs.RecordRepin(ctx, gatelog.Repin{Server: "s", Tool: "send", Old: hash("a"), New: hash("c"), Approver: "ops", Reason: "r2"})
		require.ErrorIs(t, err, sqlbudget.ErrPinConflict)
		// A new tool, from no pin, once.
		v, err = bs.RecordRepin(ctx, gatelog.Repin{Server: "s", Tool: "fetch", New: hash("d"), Approver: "sec", Reason: "new"})
		require.NoError(t, err)
		assert.EqualValues(t, 3, v)
		_, err = bs.RecordRepin(ctx, gatelog.Repin{Server: "s", Tool: "fetch", New: hash("e"), Approver: "sec", Reason: "again"})
		require.ErrorIs(t, err, sqlbudget.ErrPinConflict)

		p, repins, v, ok, err := bs.LoadPins(ctx, "s")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.EqualValues(t, 3, v)
		assert.Equal(t, map[string]string{"send": hash("b"), "fetch": hash("d")}, p.Tools)
		assert.Equal(t, []gatelog.Repin{
			{Server: "s", Tool: "fetch", New: hash("d"), Approver: "sec", Reason: "new"},
			{Server: "s", Tool: "send", Old: hash("a"), New: hash("b"), Approver: "sec", RequestedBy: "bob", Reason: "r1"},
		}, repins)

		for name, r := range map[string]gatelog.Repin{
			"NoServer":   {Tool: "t", New: hash("b"), Approver: "a"},
			"NoTool":     {Server: "s", New: hash("b"), Approver: "a"},
			"NoApprover": {Server: "s", Tool: "t", New: hash("b")},
			"BadNew":     {Server: "s", Tool: "t", New: "md5:x", Approver: "a"},
			"NoNew":      {Server: "s", Tool: "t", Approver: "a"},
			"BadOld":     {Server: "s", Tool: "t", Old: "x", New: hash("b"), Approver: "a"},
		} {
			t.Run(name, func(t *testing.T) {
				_, err := bs.RecordRepin(ctx, r)
				require.ErrorIs(t, err, sqlbudget.ErrInvalidPin)
			})
		}
		_, _, _, err = bs.ClaimPins(ctx, gatelog.Pin{Server: "s2", Tools: map[string]string{"t": "nothash"}})
		require.ErrorIs(t, err, sqlbudget.ErrInvalidPin)
		v, err = bs.PinVersion(ctx, "s")
		require.NoError(t, err)
		assert.EqualValues(t, 3, v, "nothing invalid was recorded")
	})
}
