package mcp

import (
	"encoding/json"
	"sync"
)

// ParamHeaders returns the x-mcp-header annotations (SEP-2243) of the
// upstream's tool as it last listed it (its inputSchema; CheckHeaders
// compares a call's Mcp-Param-* headers with them), nil for a tool
// without or not listed. The SDK's own check reads the tools registered
// on the proxy's server, which are placeholders without properties
// (refresh), so it never checks a proxied tool's Mcp-Param-* headers.
//
// The annotations are read once per listing: a listing is kept as the
// pages received (p.lastRaw), each a new slice, so the index is rebuilt
// only when a page changed.
func (p *Proxy) ParamHeaders(tool string) []ParamHeader {
	p.mu.Lock()
	pages := make([][]byte, 0, len(p.lastRaw))
	for _, raw := range p.lastRaw {
		pages = append(pages, raw)
	}
	p.mu.Unlock()
	return p.params.lookup(pages, tool)
}

// paramIndex is the annotations of one listing, by tool.
type paramIndex struct {
	mu    sync.Mutex
	pages []*byte // the first byte of each page indexed: identity, not content
	tools map[string][]ParamHeader
}

func (x *paramIndex) lookup(pages [][]byte, tool string) []ParamHeader {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.same(pages) {
		x.tools = map[string][]ParamHeader{}
		x.pages = x.pages[:0]
		for _, raw := range pages {
			if len(raw) > 0 {
				x.pages = append(x.pages, &raw[0])
			}
			var page struct {
				Tools []struct {
					Name        string          `json:"name"`
					InputSchema json.RawMessage `json:"inputSchema"`
				} `json:"tools"`
			}
			if json.Unmarshal(raw, &page) != nil {
				continue
			}
			for _, t := range page.Tools {
				if _, seen := x.tools[t.Name]; !seen {
					x.tools[t.Name] = ParamHeadersOf(t.InputSchema)
				}
			}
		}
	}
	return x.tools[tool]
}

// same reports whether pages are the pages indexed (in any order).
func (x *paramIndex) same(pages [][]byte) bool {
	if x.tools == nil {
		return false
	}
	n := 0
	for _, raw := range pages {
		if len(raw) == 0 {
			continue
		}
		n++
		found := false
		for _, q := range x.pages {
			if q == &raw[0] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return n == len(x.pages)
}
