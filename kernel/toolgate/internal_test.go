package toolgate

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
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

// TestArgumentSchemaCompiledOncePerLoad: ParsePolicy compiles a rule's
// argument schema to check it, and Compile uses that compiled schema
// instead of compiling it again, while the rule's Arguments are still the
// text it was compiled from.
func TestArgumentSchemaCompiledOncePerLoad(t *testing.T) {
	p, err := ParsePolicy([]byte(`{"version": 2, "budget": "10", "min_cost": "1", "tools": [
		{"match": "sql", "cost": "1", "arguments": {"properties": {"q": {"type": "string"}}}}]}`))
	require.NoError(t, err)
	loaded := p.Tools[0].schema
	require.NotNil(t, loaded, "ParsePolicy keeps the schema it compiled")
	comp, err := p.Compile()
	require.NoError(t, err)
	assert.Same(t, loaded.s, comp.rules[0].schema, "Compile does not compile it again")

	p.Tools = slices.Clone(p.Tools)
	p.Tools[0].Arguments = json.RawMessage(`{"properties": {"q": {"type": "integer"}}}`)
	comp, err = p.Compile()
	require.NoError(t, err)
	assert.NotSame(t, loaded.s, comp.rules[0].schema, "changed Arguments are compiled anew")
	assert.Error(t, validateArguments(comp.rules[0].schema, map[string]any{"q": "SELECT 1"}))
}
