package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// On 2026-07-28 an upstream asks its client for input inside a
// tools/call result (multi round-trip: an input-required result whose
// inputRequests map ids to {method, params}; mcp/protocol.go's
// InputRequestMap), not by a request of its own; the Proxy passes that
// result on as written (RawResult). DownstreamMiddleware polices those
// requests as RelayMiddleware polices the upstream's own: a URL-mode
// elicitation only to an allowed https origin, a sampling request only
// with tools the caller may call. Such a result is relayed as written or
// not at all: a request that would be trimmed (SamplingDrop) is refused
// too. roots/list passes: the client answers it with its own roots.

// mayRequestInput reports whether raw may carry input requests: whether
// it has "requests" in any case (a decoder may match member names
// without regard to case, as encoding/json does) or a \u escape (which
// may spell it). It runs on every tools/call result, so it looks for the
// rare q first (bytes.IndexByte), then around it.
func mayRequestInput(raw []byte) bool {
	if bytes.Contains(raw, []byte(`\u`)) {
		return true
	}
	for _, q := range []byte{'q', 'Q'} {
		for i := 0; ; {
			j := bytes.IndexByte(raw[i:], q)
			if j < 0 {
				break
			}
			j += i
			if j >= 2 && j+6 <= len(raw) && bytes.EqualFold(raw[j-2:j+6], []byte("requests")) {
				return true
			}
			i = j + 1
		}
	}
	return false
}

// inputRequestsOf returns the input requests of a result: its member
// named inputRequests, in any case (as encoding/json matches it); an
// error when there are several (decoders differ on which wins) or the
// result cannot be read.
func inputRequestsOf(raw []byte) (json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("a result that is not a JSON object")
	}
	var found json.RawMessage
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("a result that cannot be read: %w", err)
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("a result that cannot be read: %w", err)
		}
		if name, _ := k.(string); strings.EqualFold(name, "inputRequests") {
			if found != nil {
				return nil, fmt.Errorf("a result with its input requests twice")
			}
			found = v
		}
	}
	return found, nil
}

// policeInputRequests returns res, or a tool error result when one of
// the input requests it carries is refused. who is the call's client.
func (p *Proxy) policeInputRequests(ctx context.Context, who asked, res sdk.Result) sdk.Result {
	var raw json.RawMessage
	switch r := res.(type) {
	case *RawResult:
		raw = r.JSON
	default:
		return res // the Proxy's own results (a Guard's approval question, refusals): not the upstream's
	}
	if !mayRequestInput(raw) {
		return res
	}
	member, err := inputRequestsOf(raw)
	if err != nil {
		return refusedInput(err)
	}
	if member == nil {
		return res
	}
	var irs map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(member, &irs); err != nil {
		return refusedInput(fmt.Errorf("input requests that cannot be read: %w", err))
	}
	for id, ir := range irs {
		var err error
		switch ir.Method {
		case "elicitation/create":
			var params sdk.ElicitParams
			if err = json.Unmarshal(ir.Params, &params); err == nil {
				err = p.checkElicit(ctx, who, &params)
			}
		case "sampling/createMessage":
			//lint:ignore SA1019 the proxy relays sampling to clients on protocols before 2026-07-28, where it is not deprecated
			var params sdk.CreateMessageWithToolsParams
			if err = json.Unmarshal(ir.Params, &params); err == nil {
				_, err = p.checkSampling(ctx, who, &params, false)
			}
		case "roots/list":
		default:
			err = fmt.Errorf("unknown method %q", ir.Method)
		}
		if err != nil {
			return refusedInput(fmt.Errorf("input request %q: %w", id, err))
		}
	}
	return res
}

// refusedInput is the result of a call whose upstream asked for input
// the Proxy refuses to relay.
func refusedInput(err error) *sdk.CallToolResult {
	r := &sdk.CallToolResult{}
	r.SetError(fmt.Errorf("upstream: the input it asked for was refused: %w", err))
	return r
}
