package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// CacheScopePrivate is the cacheScope (MCP 2026-07-28, SEP-2549:
// sdk.Cacheable) of a tools/list the Guard filtered for its caller
// (ListingCallable): only the requesting user's client may cache it, never
// an intermediary serving it to another caller. An unfiltered list
// keeps the upstream's hints (ttlMs, cacheScope) as it wrote them.
const CacheScopePrivate = "private"

// privateScope returns a result object with its cacheScope member set to
// "private" — replaced where the upstream wrote one (every one, should it
// have written it twice), added at the end otherwise — and every other
// member as written, in its order.
func privateScope(raw json.RawMessage) (json.RawMessage, error) {
	if !json.Valid(raw) {
		return nil, fmt.Errorf("toolgate/mcp: a tools/list result that is not JSON")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("toolgate/mcp: a tools/list result that is not an object")
	}
	private := []byte(`"` + CacheScopePrivate + `"`)
	type span struct{ start, end int64 }
	var scopes []span
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("toolgate/mcp: tools/list result: %w", err)
		}
		start := d.InputOffset()
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("toolgate/mcp: tools/list result: %w", err)
		}
		if k == "cacheScope" {
			scopes = append(scopes, span{start, d.InputOffset()})
		}
	}
	if _, err := d.Token(); err != nil { // the closing brace
		return nil, fmt.Errorf("toolgate/mcp: tools/list result: %w", err)
	}
	if len(scopes) == 0 {
		end := d.InputOffset() - 1 // the closing brace
		var sep []byte
		open := bytes.IndexByte(raw, '{')
		if len(bytes.TrimSpace(raw[open+1:end])) > 0 {
			sep = []byte(",")
		}
		return slices.Concat(raw[:end], sep, []byte(`"cacheScope":`), private, raw[end:]), nil
	}
	out := slices.Clone(raw)
	for i := len(scopes) - 1; i >= 0; i-- {
		sp := scopes[i]
		out = slices.Concat(out[:sp.start], []byte{':'}, private, out[sp.end:])
	}
	return out, nil
}
