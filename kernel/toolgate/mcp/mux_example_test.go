package mcp_test

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/trace"
)

// Two upstream servers behind one gateway: their tools are named
// server__tool, calls go to the server the name names, and a server that
// goes down leaves the list.
func ExampleMux() {
	ctx := context.Background()
	comp, err := toolgate.Policy{
		Budget:  10 * kernel.Unit,
		MinCost: kernel.Unit / 100,
		Tools: []toolgate.Rule{
			{Match: "wiki__search", Cost: kernel.Unit},
			{Match: "tickets__search", Cost: kernel.Unit},
		},
	}.Compile()
	if err != nil {
		panic(err)
	}
	gate, err := toolgate.New(ctx, trace.NewMemoryLog(), comp)
	if err != nil {
		panic(err)
	}
	mux := gatemcp.NewMux(nil)
	guard, err := gatemcp.New(gate, gatemcp.Options{Mux: mux})
	if err != nil {
		panic(err)
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "gateway", Version: "v1"}, mux.ServerOptions(nil))
	srv.AddReceivingMiddleware(guard.Middleware(), mux.Middleware())

	// Each upstream: an in-memory server with a search tool, attached
	// through its Proxy.
	sessions := map[string]*sdk.ClientSession{}
	for _, name := range []string{"wiki", "tickets"} {
		up := sdk.NewServer(&sdk.Implementation{Name: name, Version: "v1"}, nil)
		type query struct {
			Q string `json:"q"`
		}
		sdk.AddTool(up, &sdk.Tool{Name: "search"}, func(_ context.Context, _ *sdk.CallToolRequest, in query) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " found " + in.Q}}}, nil, nil
		})
		st, ct := sdk.NewInMemoryTransports()
		if _, err := up.Connect(ctx, st, nil); err != nil {
			panic(err)
		}
		p, err := mux.Add(gatemcp.MuxServer{Name: name})
		if err != nil {
			panic(err)
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "gateway", Version: "v1"}, p.ClientOptions()).Connect(ctx, p.Transport(ct), nil)
		if err != nil {
			panic(err)
		}
		if err := mux.Attach(ctx, srv, name, cs); err != nil {
			panic(err)
		}
		sessions[name] = cs
	}

	st, ct := sdk.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		panic(err)
	}
	agent, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		panic(err)
	}
	defer func() { _ = agent.Close() }()
	list := func() {
		res, err := agent.ListTools(ctx, nil)
		if err != nil {
			panic(err)
		}
		var names []string
		for _, t := range res.Tools {
			names = append(names, t.Name)
		}
		fmt.Println(strings.Join(names, " "))
	}
	call := func(tool string) {
		res, err := agent.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"q": "outage"}})
		if err != nil {
			panic(err)
		}
		fmt.Println(res.Content[0].(*sdk.TextContent).Text)
	}
	list()
	call("tickets__search")
	_ = sessions["tickets"].Close()
	mux.Detach("tickets", sessions["tickets"])
	list()
	call("tickets__search")
	call("wiki__search")
	// Output:
	// wiki__search tickets__search
	// tickets found outage
	// wiki__search
	// tool "tickets__search" refused: server "tickets" is not running (it is restarted by its restart policy); nothing was charged
	// wiki found outage
}
