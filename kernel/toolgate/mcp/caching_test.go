package mcp_test

import (
	"context"
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/trace"
)

// listThrough lists tools through a Proxy (and a Guard listing as
// listing does) over an upstream whose tools/list says ttlMs 60000 and
// cacheScope "public", for a client of protocol version.
func listThrough(t *testing.T, listing gatemcp.Listing, version string) *sdk.ListToolsResult {
	g, err := toolgate.New(ctx, trace.NewMemoryLog(), mustCompile(catalogue(10*kernel.Unit)))
	require.NoError(t, err)
	p := gatemcp.NewProxy(nil)
	gd, err := gatemcp.New(g, gatemcp.Options{Listed: p.Listed, Listing: listing})
	require.NoError(t, err)
	srv := sdk.NewServer(&sdk.Implementation{Name: "proxy", Version: "v1"}, p.ServerOptions(nil))
	srv.AddReceivingMiddleware(gd.Middleware(), p.Middleware())

	up := sdk.NewServer(&sdk.Implementation{Name: "upstream", Version: "v1"}, &sdk.ServerOptions{
		SetCacheable: func(_ context.Context, _ sdk.Request, c *sdk.Cacheable) { c.TTLMs, c.CacheScope = 60000, "public" }})
	(&tools{runs: map[string]int{}}).add(up, "read_file", "search", "format_disk")
	st, ct := sdk.NewInMemoryTransports()
	_, err = up.Connect(ctx, st, nil)
	require.NoError(t, err)
	client := sdk.NewClient(&sdk.Implementation{Name: "proxy", Version: "v1"}, p.ClientOptions())
	upcs, err := client.Connect(ctx, p.Transport(ct), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = upcs.Close() })
	_, err = p.Attach(ctx, srv, upcs)
	require.NoError(t, err)

	st, ct = sdk.NewInMemoryTransports()
	_, err = srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	return res
}

// TestFilteredListIsPrivate: a tools/list filtered for its caller
// (ListingCallable: format_disk has no rule and is left out) is marked
// cacheScope "private", whatever the upstream said, so that no
// intermediary serves one caller's list to another; a list passed on
// whole (ListingAll) keeps the upstream's hints. On both protocols.
func TestFilteredListIsPrivate(t *testing.T) {
	for _, version := range []string{currentProtocol, legacyProtocol} {
		all := listThrough(t, gatemcp.ListingAll, version)
		assert.Len(t, all.Tools, 3)
		assert.Equal(t, 60000, all.TTLMs, version)
		assert.Equal(t, "public", all.CacheScope, version)

		callable := listThrough(t, gatemcp.ListingCallable, version)
		assert.Len(t, callable.Tools, 2, "format_disk is never callable")
		assert.Equal(t, gatemcp.CacheScopePrivate, callable.CacheScope, version)
	}
}

// TestPrivateScopeKeepsTheRest: privateScope sets cacheScope to
// "private" — replacing the upstream's, or adding it — and leaves every
// other member as it was.
func TestPrivateScopeKeepsTheRest(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		members := rapid.MapOf(rapid.StringMatching(`[a-zA-Z]{1,8}`), rapid.OneOf(rapid.Just(`1`), rapid.Just(`"x"`), rapid.Just(`[{"a":null}]`), rapid.Just(`{}`))).Draw(rt, "members")
		obj := map[string]json.RawMessage{}
		for k, v := range members {
			obj[k] = json.RawMessage(v)
		}
		raw, err := json.Marshal(obj)
		require.NoError(rt, err)
		out, err := gatemcp.PrivateScope(raw)
		require.NoError(rt, err)
		var got map[string]json.RawMessage
		require.NoError(rt, json.Unmarshal(out, &got), "%s", out)
		require.Equal(rt, `"private"`, string(got["cacheScope"]))
		delete(got, "cacheScope")
		delete(obj, "cacheScope")
		require.Equal(rt, len(obj), len(got))
		for k, v := range obj {
			require.JSONEq(rt, string(v), string(got[k]))
		}
	})
}

// FuzzPrivateScope: any input is refused or made an object whose
// cacheScope is "private".
func FuzzPrivateScope(f *testing.F) {
	f.Add([]byte(`{"tools":[],"cacheScope":"public","ttlMs":5}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"tools":[]} `))
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := gatemcp.PrivateScope(raw)
		if err != nil || !json.Valid(raw) {
			return
		}
		var got struct {
			CacheScope *string `json:"cacheScope"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s gave %s: %v", raw, out, err)
		}
		if got.CacheScope == nil || *got.CacheScope != "private" {
			t.Fatalf("%s gave %s", raw, out)
		}
	})
}
