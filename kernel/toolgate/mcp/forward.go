package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Forward serves upstream's tools from srv: it lists every tool the
// upstream session has (ClientSession.Tools, all pages) and adds each to
// srv with a handler that forwards the call, its arguments as the client
// sent them, to upstream and returns upstream's result as it is. With a
// Guard's Middleware on srv, every forwarded call goes through the gate
// first. It returns the names of the tools added, in upstream's order.
//
// The tools are added with Server.AddTool and a raw handler:
//
//	func (s *Server) AddTool(t *Tool, h ToolHandler)                                   // mcp/server.go
//	type ToolHandler func(context.Context, *CallToolRequest) (*CallToolResult, error) // mcp/tool.go
//
// whose request's Params.Arguments is the json.RawMessage received, passed
// on as CallToolParams.Arguments (an any that marshals as the raw JSON).
// The SDK validates nothing on this path: the upstream checks its own
// arguments, and its result (content, structured content, IsError) goes
// back unchanged. A tool whose input schema is not a JSON object schema
// (which AddTool refuses) is skipped with a warning on log; so is a name
// listed twice. A call upstream fails to answer (a protocol error, a dead
// process) returns a result with IsError and the error's text, so the
// model reads it.
//
// Forward lists the tools once: it does not follow upstream's
// tools/list_changed notifications, and upstream's own requests to its
// client (elicitation, sampling, roots) are not relayed downstream.
func Forward(ctx context.Context, srv *sdk.Server, upstream *sdk.ClientSession, log *slog.Logger) ([]string, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var names []string
	seen := map[string]bool{}
	for tool, err := range upstream.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("toolgate/mcp: listing the upstream's tools: %w", err)
		}
		if seen[tool.Name] {
			log.Warn("upstream lists a tool twice; serving the first", "tool", tool.Name)
			continue
		}
		if err := objectSchema(tool.InputSchema); err != nil {
			log.Warn("skipping upstream tool", "tool", tool.Name, "err", err)
			continue
		}
		seen[tool.Name] = true
		srv.AddTool(tool, forwardTo(upstream, tool.Name))
		names = append(names, tool.Name)
	}
	return names, nil
}

// forwardTo returns the handler of one forwarded tool.
func forwardTo(upstream *sdk.ClientSession, name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		p := &sdk.CallToolParams{Name: name}
		if len(req.Params.Arguments) > 0 {
			p.Arguments = req.Params.Arguments
		}
		res, err := upstream.CallTool(ctx, p)
		if err != nil {
			r := &sdk.CallToolResult{}
			r.SetError(fmt.Errorf("upstream: %w", err))
			return r, nil
		}
		return res, nil
	}
}

// objectSchema checks what Server.AddTool requires of an input schema:
// present, and a JSON object with "type": "object".
func objectSchema(schema any) error {
	if schema == nil {
		return fmt.Errorf("no input schema")
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return fmt.Errorf("input schema is not a JSON object")
	}
	if m["type"] != "object" {
		return fmt.Errorf(`input schema has type %v, not "object"`, m["type"])
	}
	return nil
}
