package toolgate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/trace"
)

// TestMapsHoldOnlyWhatIsStillToBeUsed: approvals and denials, once used,
// leave nothing behind in the caller's maps, however many distinct calls
// were decided.
func TestMapsHoldOnlyWhatIsStillToBeUsed(t *testing.T) {
	ctx := context.Background()
	log, err := trace.NewLog(trace.NewMemory())
	require.NoError(t, err)
	comp, err := Policy{Budget: 1000 * kernel.Unit, MinCost: 1,
		Tools: []Rule{{Match: "delete_file", Cost: 1, Tier: claims.TierDelete}}}.Compile()
	require.NoError(t, err)
	g, err := New(ctx, log, comp)
	require.NoError(t, err)
	for i := range 20 {
		c := Call{Tool: "delete_file", Arguments: []byte{'[', byte('0' + i%10), ',', byte('0' + i/10), ']'}}
		d, err := g.Before(ctx, c)
		require.NoError(t, err)
		if i%2 == 0 {
			_, err = g.Approve(ctx, d.Approval.ID, DefaultApprover, "")
		} else {
			err = g.Deny(ctx, d.Approval.ID, DefaultApprover, "")
		}
		require.NoError(t, err)
		d, err = g.Before(ctx, d.Call)
		require.NoError(t, err)
		require.NotEqual(t, AskApproval, d.Verdict)
	}
	cl := g.callers[""]
	require.Empty(t, cl.granted)
	require.Empty(t, cl.denied)
	require.Empty(t, cl.waiting)
	require.Empty(t, g.approvals)
}
