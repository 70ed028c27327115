package mcp

import (
	"context"
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// SetPins makes the Proxy enforce ps: every listing of the upstream's
// tools — the whole of it at Attach (start, restart, reconnect) and on
// tools/list_changed, each page a client asks for — is checked against
// the pins (Pins.Observe), and the tools/list a client receives leaves
// out the tools whose listed definition is not pinned, the rest as the
// upstream wrote them. Set it before Attach.
func (p *Proxy) SetPins(ps *Pins) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pins = ps
}

func (p *Proxy) pinsOf() *Pins {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pins
}

// instructionsOf returns the upstream's instructions from its
// initialize result, and whether it gave any.
func instructionsOf(up *sdk.ClientSession) (string, bool) {
	if up == nil {
		return "", false
	}
	r := up.InitializeResult()
	if r == nil || r.Instructions == "" {
		return "", false
	}
	return r.Instructions, true
}

// listed checks one page of the upstream's tools/list a client asked
// for and returns it without the tools not pinned. A page that cannot
// be read (a malformed definition, a name listed twice) is returned with
// no tools at all: what cannot be checked is not shown.
func (ps *Pins) listed(ctx context.Context, raw json.RawMessage, cursor string, instructions string, given bool) (*RawResult, error) {
	var next struct {
		NextCursor string `json:"nextCursor"`
	}
	_ = json.Unmarshal(raw, &next)
	complete := cursor == "" && next.NextCursor == ""
	if err := ps.Observe(ctx, []json.RawMessage{raw}, instructions, given, complete); err != nil {
		return nil, err
	}
	out, err := filterTools(raw, ps.Visible)
	if err != nil {
		return nil, err
	}
	return &RawResult{JSON: out}, nil
}
