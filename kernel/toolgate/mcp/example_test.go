package mcp_test

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/trace"
)

// A server whose tools/call requests all go through a gate: searches cost
// a unit each from a budget of two, deletes need the client's human.
func ExampleGuard() {
	ctx := context.Background()
	comp, err := toolgate.Policy{
		Budget:  2 * kernel.Unit,
		MinCost: kernel.Unit / 100,
		Tools: []toolgate.Rule{
			{Match: "search", Cost: kernel.Unit},
			{Match: "delete_*", Cost: kernel.Unit / 10, Tier: claims.TierDelete},
		},
	}.Compile()
	if err != nil {
		panic(err)
	}
	gate, err := toolgate.New(ctx, trace.NewMemoryLog(), comp)
	if err != nil {
		panic(err)
	}
	guard, err := gatemcp.New(gate, gatemcp.Options{})
	if err != nil {
		panic(err)
	}

	srv := sdk.NewServer(&sdk.Implementation{Name: "files", Version: "v1"}, nil)
	type query struct {
		Q string `json:"q"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "search"}, func(_ context.Context, _ *sdk.CallToolRequest, in query) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "found " + in.Q}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "delete_file"}, func(_ context.Context, _ *sdk.CallToolRequest, in query) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "deleted " + in.Q}}}, nil, nil
	})
	srv.AddReceivingMiddleware(guard.Middleware())

	// A client whose human declines every request.
	st, ct := sdk.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		panic(err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			fmt.Println("human asked:", req.Params.Message)
			return &sdk.ElicitResult{Action: "decline"}, nil
		},
	})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()

	for _, c := range []struct{ tool, q string }{{"search", "a"}, {"delete_file", "b"}, {"search", "c"}, {"search", "d"}} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: c.tool, Arguments: map[string]any{"q": c.q}})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s %s: error=%v %s\n", c.tool, c.q, res.IsError, res.Content[0].(*sdk.TextContent).Text)
	}
	// Output:
	// search a: error=false found a
	// human asked: Allow the DELETE tool call "delete_file" with arguments {"q":"b"}?
	// delete_file b: error=true tool "delete_file" (rule #1, approval): DELETE denied by human: declined
	// search c: error=false found c
	// search d: error=true tool "search" (rule #0, kernel): action "search" rejected: budget: cost 1, remaining 0
}
