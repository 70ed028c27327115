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
// "private" — replaced where the upstream wrote one, added at the end
// otherwise — and every other member as written, in its order.
func privateScope(raw json.RawMessage) (json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("toolgate/mcp: a tools/list result that is not an object")
	}
	private := []byte(`"` + CacheScopePrivate + `"`)
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
			return slices.Concat(raw[:start], []byte{':'}, private, raw[d.InputOffset():]), nil
		}
	}
	end := bytes.LastIndexByte(raw, '}')
	sep := []byte(",")
	if len(bytes.TrimSpace(raw[1:end])) == 0 {
		sep = nil
	}
	return slices.Concat(raw[:end], sep, []byte(`"cacheScope":`), private, raw[end:]), nil
}
