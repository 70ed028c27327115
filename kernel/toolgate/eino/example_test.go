package eino_test

import (
	"context"
	"fmt"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/eino"
	"github.com/verity-go/verity/trace"
)

// playback is a model.ToolCallingChatModel that plays fixed turns back.
type playback struct{ turns []*schema.Message }

func (p *playback) Generate(context.Context, []*schema.Message, ...model.Option) (*schema.Message, error) {
	m := p.turns[0]
	p.turns = p.turns[1:]
	return m, nil
}

func (p *playback) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	m, err := p.Generate(ctx, in, opts...)
	return schema.StreamReaderFromArray([]*schema.Message{m}), err
}

func (p *playback) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return p, nil }

// show prints a run's events and returns the approvals it waits for.
func show(it *adk.AsyncIterator[*adk.AgentEvent]) []eino.Pending {
	var pending []eino.Pending
	for {
		ev, ok := it.Next()
		if !ok {
			return pending
		}
		if ev.Err != nil {
			fmt.Println("error:", ev.Err)
		}
		if ev.Output != nil && ev.Output.MessageOutput != nil {
			m, _ := ev.Output.MessageOutput.GetMessage()
			switch {
			case m.Role == schema.Tool:
				fmt.Printf("  %s → %s\n", m.ToolCallID, m.Content)
			case len(m.ToolCalls) > 0:
				for _, c := range m.ToolCalls {
					fmt.Printf("model calls %s %s %s\n", c.ID, c.Function.Name, c.Function.Arguments)
				}
			default:
				fmt.Println("model:", m.Content)
			}
		}
		if ev.Action != nil && ev.Action.Interrupted != nil {
			pending = eino.PendingApprovals(ev.Action.Interrupted.InterruptContexts)
			for _, p := range pending {
				fmt.Println("waiting:", p.Question)
			}
		}
	}
}

// An agent whose every tool call goes through the gate: a delete waits
// for a human, the budget refuses the call it cannot pay and the model
// reads why.
func Example() {
	ctx := context.Background()
	comp, err := toolgate.Policy{
		Budget:  3 * kernel.Unit,
		MinCost: kernel.Unit / 100,
		Tools: []toolgate.Rule{
			{Match: "read_file", Cost: kernel.Unit},
			{Match: "delete_file", Cost: kernel.Unit, Tier: claims.TierDelete},
		},
	}.Compile()
	if err != nil {
		panic(err)
	}
	g, err := toolgate.New(ctx, trace.NewMemoryLog(), comp)
	if err != nil {
		panic(err)
	}
	type file struct {
		Path string `json:"path"`
	}
	read := utils.NewTool(&schema.ToolInfo{Name: "read_file", Desc: "read a file"},
		func(_ context.Context, f file) (string, error) { return "contents of " + f.Path, nil })
	del := utils.NewTool(&schema.ToolInfo{Name: "delete_file", Desc: "delete a file"},
		func(_ context.Context, f file) (string, error) { return "deleted " + f.Path, nil })
	tc := func(id, name, path string) schema.ToolCall {
		return schema.ToolCall{ID: id, Function: schema.FunctionCall{Name: name, Arguments: `{"path":"` + path + `"}`}}
	}
	agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name:        "janitor",
		Description: "cleans up /tmp",
		Model: &playback{turns: []*schema.Message{
			schema.AssistantMessage("", []schema.ToolCall{tc("c1", "read_file", "/tmp/a"), tc("c2", "delete_file", "/tmp/a")}),
			schema.AssistantMessage("", []schema.ToolCall{tc("c3", "read_file", "/tmp/b"), tc("c4", "read_file", "/tmp/c")}),
			schema.AssistantMessage("done: /tmp/a deleted, /tmp/c left for later", nil),
		}},
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{
			Tools:               []tool.BaseTool{read, del},
			ExecuteSequentially: true, // for a stable printout; parallel calls are gated alike
		}},
		Middlewares: []adk.AgentMiddleware{eino.AgentMiddleware(g)},
	})
	if err != nil {
		panic(err)
	}
	runner := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent, CheckPointStore: &memStore{}})

	pending := show(runner.Query(ctx, "clean up /tmp", adk.WithCheckPointID("run-1")))

	// The human approves; the run resumes where it stopped.
	it, err := runner.ResumeWithParams(ctx, "run-1", &adk.ResumeParams{
		Targets: map[string]any{pending[0].InterruptID: eino.Approve("scratch file")},
	})
	if err != nil {
		panic(err)
	}
	show(it)
	// Output:
	// model calls c1 read_file {"path":"/tmp/a"}
	// model calls c2 delete_file {"path":"/tmp/a"}
	//   c1 → contents of /tmp/a
	// waiting: Allow the DELETE tool call "delete_file" with arguments {"path":"/tmp/a"}?
	//   c2 → deleted /tmp/a
	// model calls c3 read_file {"path":"/tmp/b"}
	// model calls c4 read_file {"path":"/tmp/c"}
	//   c3 → contents of /tmp/b
	//   c4 → tool "read_file" (rule #0, kernel): action "read_file" rejected: budget: cost 1, remaining 0
	// model: done: /tmp/a deleted, /tmp/c left for later
}
