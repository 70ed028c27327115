package toolgate_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate"
)

// TestPrincipalContextKeepsItsCopy: a principal put in a context comes
// back equal, and neither the caller's slices before nor the reader's
// after can change what the context holds.
func TestPrincipalContextKeepsItsCopy(t *testing.T) {
	_, ok := toolgate.PrincipalFrom(context.Background())
	assert.False(t, ok, "no principal in a bare context")

	p := toolgate.Principal{Issuer: "https://id.example", Subject: "alice", Groups: []string{"eng"},
		Scopes: []string{"repo:read"}, Attributes: map[string]string{"tenant": "t1"}}
	ctx := toolgate.WithPrincipal(context.Background(), p)
	p.Groups[0], p.Scopes[0], p.Attributes["tenant"] = "x", "x", "x"

	got, ok := toolgate.PrincipalFrom(ctx)
	require.True(t, ok)
	want := toolgate.Principal{Issuer: "https://id.example", Subject: "alice", Groups: []string{"eng"},
		Scopes: []string{"repo:read"}, Attributes: map[string]string{"tenant": "t1"}}
	assert.Equal(t, want, got)
	got.Groups[0], got.Attributes["tenant"] = "y", "y"
	again, _ := toolgate.PrincipalFrom(ctx)
	assert.Equal(t, want, again)
}
