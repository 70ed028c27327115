package toolgate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
)

// TestHintsAreTrustedOnlyFromAPinnedDefinition: a tier_from_hints rule
// takes a call's tier from its pinned definition's hint, and from
// nothing else: without a pinned definition, or with no valid hint, the
// call is DELETE and asked about.
func TestHintsAreTrustedOnlyFromAPinnedDefinition(t *testing.T) {
	p, err := ParsePolicy([]byte(`{"version": 2, "budget": "10", "min_cost": "0.01", "unknown_tools": "allow",
		"default_rule": {"cost": "0.1", "tier_from_hints": true}, "tools": []}`))
	require.NoError(t, err)
	require.True(t, p.DefaultRule.TierFromHints)
	c, err := p.Compile()
	require.NoError(t, err)
	const def = "sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	for _, tc := range []struct {
		name       string
		definition string
		hint       claims.RiskTier
		want       Verdict
		tier       claims.RiskTier
	}{
		{"read-only, pinned", def, claims.TierReadOnly, Allow, claims.TierReadOnly},
		{"not destructive, pinned", def, claims.TierModify, Allow, claims.TierModify},
		{"destructive, pinned", def, claims.TierDelete, AskApproval, claims.TierDelete},
		{"read-only, not pinned", "", claims.TierReadOnly, AskApproval, claims.TierDelete},
		{"pinned, no hint", def, "", AskApproval, claims.TierDelete},
		{"pinned, not a tier", def, "READ", AskApproval, claims.TierDelete},
	} {
		r := c.Decide(Snapshot{}, Call{Tool: "anything", Arguments: []byte(`{}`), Definition: tc.definition, HintedTier: tc.hint}, time.Unix(0, 0))
		assert.Equal(t, tc.want, r.Verdict, tc.name)
		assert.Equal(t, tc.tier, r.Tier, tc.name)
	}
	// A rule without tier_from_hints ignores every hint.
	plain, err := ParsePolicy([]byte(`{"version": 2, "budget": "10", "min_cost": "0.01", "tools": [{"match": "t", "cost": "0.1"}]}`))
	require.NoError(t, err)
	pc, err := plain.Compile()
	require.NoError(t, err)
	r := pc.Decide(Snapshot{}, Call{Tool: "t", Arguments: []byte(`{}`), Definition: def, HintedTier: claims.TierDelete}, time.Unix(0, 0))
	assert.Equal(t, Allow, r.Verdict)
	assert.Equal(t, claims.TierReadOnly, r.Tier)
	// The member is written back.
	b, err := p.MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(b), `"tier_from_hints":true`)
}

// TestTierFromHintsExcludesATier: a policy's tier overrides every hint,
// so naming both is refused; the hinted DELETE needs an approver.
func TestTierFromHintsExcludesATier(t *testing.T) {
	for name, src := range map[string]string{
		"with a tier": `{"version": 2, "budget": "10", "min_cost": "0.01", "tools": [{"match": "t", "cost": "0.1", "tier": "MODIFY", "tier_from_hints": true}]}`,
		"refusing":    `{"version": 2, "budget": "10", "min_cost": "0.01", "tools": [{"match": "t", "effect": "refuse", "tier_from_hints": true}]}`,
		"no approver": `{"version": 2, "budget": "10", "min_cost": "0.01", "approvers": {"PRIVILEGE": ["root"]}, "tools": [{"match": "t", "cost": "0.1", "tier_from_hints": true}]}`,
	} {
		_, err := ParsePolicy([]byte(src))
		require.Error(t, err, name)
		assert.ErrorIs(t, err, ErrInvalidPolicy, name)
		assert.Contains(t, err.Error(), "tier_from_hints", name)
	}
}
