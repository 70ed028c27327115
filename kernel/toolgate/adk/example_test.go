package adk_test

import (
	"context"
	"fmt"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/adk"
	"github.com/verity-go/verity/trace"
)

// An agent whose tool callbacks go through the gate: the first send fits
// the budget and runs, the second is refused, and the model reads why as
// the tool's error.
func Example() {
	ctx := context.Background()
	log := trace.NewMemoryLog()
	comp, _ := toolgate.Policy{
		Budget:  5 * kernel.Unit,
		MinCost: kernel.Unit / 100,
		Tools:   []toolgate.Rule{{Match: "send", Cost: 3 * kernel.Unit}},
	}.Compile()
	gate, _ := toolgate.New(ctx, log, comp)
	guard, _ := adk.New(gate)

	send, _ := functiontool.New(functiontool.Config{Name: "send", Description: "sends a message"},
		func(_ agent.Context, a struct {
			To string `json:"to"`
		}) (map[string]any, error) {
			return map[string]any{"sent_to": a.To}, nil
		})
	// A scripted stand-in for a model: two sends in one turn.
	model := newScript("scripted", []*genai.FunctionCall{
		{ID: "1", Name: "send", Args: map[string]any{"to": "bob"}},
	}, []*genai.FunctionCall{
		{ID: "2", Name: "send", Args: map[string]any{"to": "carol"}},
	})
	cfg := llmagent.Config{Name: "assistant", Model: model, Tools: []tool.Tool{send}}
	guard.Install(&cfg) // BeforeToolCallbacks and AfterToolCallbacks, first
	a, _ := llmagent.New(cfg)
	r, _ := runner.New(runner.Config{AppName: "app", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})

	for _, text := range []string{"tell bob", "tell carol"} {
		for ev, err := range r.Run(ctx, "alice", "s1", genai.NewContentFromText(text, genai.RoleUser), agent.RunConfig{}) {
			if err != nil {
				fmt.Println(err)
				return
			}
			for _, p := range ev.Content.Parts {
				if p.FunctionResponse != nil {
					fmt.Println(p.FunctionResponse.Response)
				}
			}
		}
	}
	// Output:
	// map[sent_to:bob]
	// map[error:tool "send" (rule #0, kernel): action "send" rejected: budget: cost 3, remaining 2]
}

// The plugin guards every agent of a runner. A DELETE-tier call asks
// through ADK's confirmation flow; the user's answer is the claims
// approval, and the call runs once.
func ExampleGuard_Plugin() {
	ctx := context.Background()
	comp, _ := toolgate.Policy{
		Budget:  10 * kernel.Unit,
		MinCost: kernel.Unit / 100,
		Tools:   []toolgate.Rule{{Match: "delete_file", Cost: kernel.Unit, Tier: claims.TierDelete}},
	}.Compile()
	gate, _ := toolgate.New(ctx, trace.NewMemoryLog(), comp)
	guard, _ := adk.New(gate)
	guardPlugin, _ := guard.Plugin()

	del, _ := functiontool.New(functiontool.Config{Name: "delete_file", Description: "deletes a file"},
		func(_ agent.Context, a struct {
			Path string `json:"path"`
		}) (map[string]any, error) {
			fmt.Println("deleting", a.Path)
			return map[string]any{"deleted": a.Path}, nil
		})
	model := newScript("scripted", []*genai.FunctionCall{{ID: "d1", Name: "delete_file", Args: map[string]any{"path": "/tmp/old"}}})
	a, _ := llmagent.New(llmagent.Config{Name: "assistant", Model: model, Tools: []tool.Tool{del}})
	r, _ := runner.New(runner.Config{AppName: "app", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{guardPlugin}}})

	run := func(msg *genai.Content) (confirmationID string) {
		for ev, err := range r.Run(ctx, "alice", "s1", msg, agent.RunConfig{}) {
			if err != nil {
				fmt.Println(err)
				return ""
			}
			for _, p := range ev.Content.Parts {
				if fc := p.FunctionCall; fc != nil && fc.Name == toolconfirmation.FunctionCallName {
					fmt.Println("asked:", gate.Pending()[0].Question)
					confirmationID = fc.ID
				}
			}
		}
		return confirmationID
	}
	id := run(genai.NewContentFromText("clean up", genai.RoleUser))
	// The user confirms: a FunctionResponse for adk_request_confirmation.
	run(&genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: id, Name: toolconfirmation.FunctionCallName, Response: map[string]any{"confirmed": true},
	}}}})
	// Output:
	// asked: Allow the DELETE tool call "delete_file" with arguments {"path":"/tmp/old"}?
	// deleting /tmp/old
}
