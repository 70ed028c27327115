package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

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

// inputRequestsKey is how a result that carries input requests says so.
var inputRequestsKey = []byte(`"inputRequests"`)

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
	if !bytes.Contains(raw, inputRequestsKey) {
		return res
	}
	var top struct {
		InputRequests map[string]struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"inputRequests"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return refusedInput(fmt.Errorf("an input-required result that cannot be read: %w", err))
	}
	for id, ir := range top.InputRequests {
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
