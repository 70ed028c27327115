package eino_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/eino"
	"github.com/verity-go/verity/trace"
)

// newToolsNode returns a ToolsNode over tools with the gate's middleware.
func newToolsNode(t tb, g *toolgate.Gate, opts []eino.Option, tools ...tool.BaseTool) *compose.ToolsNode {
	t.Helper()
	tn, err := compose.NewToolNode(context.Background(), &compose.ToolsNodeConfig{
		Tools:               tools,
		ToolCallMiddlewares: []compose.ToolMiddleware{eino.Middleware(g, opts...)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

// measuredTool reports the cost its arguments name ({"actual": n}, in
// thousandths of a unit) and answers "ran:" + its call id.
type measuredTool struct {
	name string
	runs atomic.Int64
}

func (m *measuredTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: m.name, Desc: "a tool priced afterwards"}, nil
}

func (m *measuredTool) InvokableRun(ctx context.Context, args string, _ ...tool.Option) (string, error) {
	m.runs.Add(1)
	runtime.Gosched()
	var a struct {
		Actual int64  `json:"actual"`
		ID     string `json:"id"`
	}
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		return "", err
	}
	if !eino.ReportCost(ctx, kernel.Cost(a.Actual)) {
		return "", errors.New("not under the gate")
	}
	return "ran:" + a.ID, nil
}

// TestConcurrentToolCallsNeverOverspend: however many calls one message
// holds (the ToolsNode runs them in parallel) and however many
// ToolsNodes run at once for one caller, the caller's net spend never
// exceeds its budget, every call that ran is charged exactly as
// recorded, every call that did not run answers the model with a
// refusal, and the log verifies and replays.
func TestConcurrentToolCallsNeverOverspend(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		costs := rapid.SliceOfN(rapid.Int64Range(1, 4), 3, 3).Draw(rt, "costs")
		reserve := kernel.Cost(rapid.Int64Range(1, 3).Draw(rt, "reserve")) * kernel.Unit
		budget := kernel.Cost(rapid.Int64Range(1, 15).Draw(rt, "budget")) * kernel.Unit
		cfg := toolgate.Policy{Budget: budget, MinCost: kernel.Unit / 10,
			Tools: []toolgate.Rule{{Match: "measured", Cost: reserve, Reserve: true}}}
		tools := []tool.BaseTool{}
		fixed := make([]*fakeTool, len(costs))
		for i, c := range costs {
			name := fmt.Sprintf("fixed%d", i)
			cfg.Tools = append(cfg.Tools, toolgate.Rule{Match: name, Cost: kernel.Cost(c) * kernel.Unit})
			fixed[i] = &fakeTool{name: name, run: func(_ context.Context, args string) (string, error) {
				runtime.Gosched()
				var a struct{ ID string }
				_ = json.Unmarshal([]byte(args), &a)
				return "ran:" + a.ID, nil
			}}
			tools = append(tools, fixed[i])
		}
		measured := &measuredTool{name: "measured"}
		tools = append(tools, measured)
		g, log := newGate(rt, cfg)
		tn := newToolsNode(rt, g, nil, tools...)
		ctx := eino.WithCaller(context.Background(), "c")

		// Each node gets its own message of parallel calls.
		nodes := rapid.IntRange(1, 3).Draw(rt, "nodes")
		msgs := make([]*schema.Message, nodes)
		total := 0
		for n := range msgs {
			k := rapid.IntRange(1, 6).Draw(rt, fmt.Sprintf("calls%d", n))
			var cs []schema.ToolCall
			for i := 0; i < k; i++ {
				id := fmt.Sprintf("n%d-%d", n, i)
				which := rapid.IntRange(0, len(tools)-1).Draw(rt, "tool")
				var args string
				if which == len(fixed) {
					actual := rapid.Int64Range(0, 2*int64(reserve)).Draw(rt, "actual")
					args = fmt.Sprintf(`{"actual":%d,"id":%q}`, actual, id)
				} else {
					args = fmt.Sprintf(`{"id":%q}`, id)
				}
				name, _ := tools[which].Info(ctx)
				cs = append(cs, call(id, name.Name, args))
			}
			total += k
			msgs[n] = calls(cs...)
		}
		outs := make([][]*schema.Message, nodes)
		errs := make([]error, nodes)
		var wg sync.WaitGroup
		for n := range msgs {
			wg.Go(func() { outs[n], errs[n] = tn.Invoke(ctx, msgs[n]) })
		}
		wg.Wait()

		ranMsgs := 0
		for n, out := range outs {
			if errs[n] != nil {
				rt.Fatalf("node %d: %v", n, errs[n])
			}
			if len(out) != len(msgs[n].ToolCalls) {
				rt.Fatalf("node %d: %d answers to %d calls", n, len(out), len(msgs[n].ToolCalls))
			}
			for i, m := range out {
				id := msgs[n].ToolCalls[i].ID
				switch {
				case m.Content == "ran:"+id:
					ranMsgs++
				case m.Content == "" || strings.HasPrefix(m.Content, "ran:"):
					rt.Fatalf("call %s answered %q", id, m.Content)
				}
			}
		}
		runs := measured.runs.Load()
		for _, f := range fixed {
			runs += f.runs.Load()
		}
		if int64(ranMsgs) != runs {
			rt.Fatalf("%d tools ran, %d calls answered with output", runs, ranMsgs)
		}
		rs := results(rt, log)
		if int64(len(rs)) != runs {
			rt.Fatalf("%d tools ran, %d results recorded", runs, len(rs))
		}
		var charged kernel.Cost
		for _, r := range rs {
			charged += kernel.Cost(r.Charged)
		}
		m, ok := g.Meter("c")
		if !ok {
			rt.Fatal("no meter")
		}
		b := m.Budget()
		if b.Net() > b.Limit() {
			rt.Fatalf("overspent: net %v > budget %v", b.Net(), b.Limit())
		}
		if b.Net() != charged {
			rt.Fatalf("net spend %v, recorded charges %v", b.Net(), charged)
		}
		if len(m.Reservations()) != 0 {
			rt.Fatalf("reservations left open: %v", m.Reservations())
		}
		if err := verifyLog(log, g, "c"); err != nil {
			rt.Fatal(err)
		}
	})
}

// TestToolsNodeParallelCallsUnderBudget: a message of more calls than the
// budget pays, run in parallel, runs exactly as many as it pays.
func TestToolsNodeParallelCallsUnderBudget(t *testing.T) {
	g, log := newGate(t, catalogue(3*kernel.Unit))
	read := &fakeTool{name: "read_file"}
	tn := newToolsNode(t, g, nil, read)
	var cs []schema.ToolCall
	for i := range 8 {
		cs = append(cs, call(fmt.Sprintf("c%d", i), "read_file", fmt.Sprintf(`{"n":%d}`, i)))
	}
	out, err := tn.Invoke(context.Background(), calls(cs...))
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, m := range out {
		if strings.Contains(m.Content, "rejected") {
			refused++
		}
	}
	if read.runs.Load() != 3 || refused != 5 {
		t.Fatalf("ran %d, refused %d; want 3 and 5", read.runs.Load(), refused)
	}
	checkLog(t, log, g, "")
}

// enhancedTool is an enhanced invokable tool answering one text part.
type enhancedTool struct {
	name string
	runs atomic.Int64
}

func (e *enhancedTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: e.name, Desc: "a multimodal tool"}, nil
}

func (e *enhancedTool) InvokableRun(_ context.Context, arg *schema.ToolArgument, _ ...tool.Option) (*schema.ToolResult, error) {
	e.runs.Add(1)
	return &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: "seen " + arg.Text}}}, nil
}

// enhancedStreamTool is an enhanced streamable tool answering two parts.
type enhancedStreamTool struct {
	name string
	runs atomic.Int64
}

func (e *enhancedStreamTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: e.name, Desc: "a streaming multimodal tool"}, nil
}

func (e *enhancedStreamTool) StreamableRun(context.Context, *schema.ToolArgument, ...tool.Option) (*schema.StreamReader[*schema.ToolResult], error) {
	e.runs.Add(1)
	return schema.StreamReaderFromArray([]*schema.ToolResult{
		{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: "part 1"}}},
		{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: "part 2"}}},
	}), nil
}

// TestEnhancedToolsGoThroughTheGate: multimodal tools (eino's enhanced
// invokable and streamable tools) are gated like the others, in Invoke
// and in Stream.
func TestEnhancedToolsGoThroughTheGate(t *testing.T) {
	cfg := toolgate.Policy{Budget: 2 * kernel.Unit, MinCost: kernel.Unit,
		Tools: []toolgate.Rule{{Match: "look", Cost: kernel.Unit}, {Match: "watch", Cost: kernel.Unit}}}
	g, log := newGate(t, cfg)
	look, watch := &enhancedTool{name: "look"}, &enhancedStreamTool{name: "watch"}
	tn := newToolsNode(t, g, nil, look, watch)
	ctx := context.Background()

	out, err := tn.Invoke(ctx, calls(call("c1", "look", `{"at":"x"}`)))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || len(out[0].UserInputMultiContent) != 1 || out[0].UserInputMultiContent[0].Text != `seen {"at":"x"}` {
		t.Fatalf("look answered %+v", out)
	}
	sr, err := tn.Stream(ctx, calls(call("c2", "watch", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for {
		ms, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m != nil {
				for _, p := range m.UserInputMultiContent {
					texts = append(texts, p.Text)
				}
			}
		}
	}
	if strings.Join(texts, ",") != "part 1,part 2" {
		t.Fatalf("watch streamed %q", texts)
	}
	// The budget is spent: both kinds are refused, as text.
	out, err = tn.Invoke(ctx, calls(call("c3", "look", `{}`), call("c4", "watch", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range out {
		if len(m.UserInputMultiContent) != 1 || !strings.Contains(m.UserInputMultiContent[0].Text, "rejected") {
			t.Fatalf("refused call answered %+v", m.UserInputMultiContent)
		}
	}
	if look.runs.Load() != 1 || watch.runs.Load() != 1 {
		t.Fatalf("look ran %d, watch ran %d", look.runs.Load(), watch.runs.Load())
	}
	rs := results(t, log)
	if len(rs) != 2 || !strings.Contains(rs[0].OutputText, `"text":"seen`) || !strings.Contains(rs[1].OutputText, `"part 2"`) {
		t.Fatalf("results %+v", rs)
	}
	checkLog(t, log, g, "")
}

// TestReportCostSettlesReservation: a reserved call is settled at the
// cost the tool reported; one that reports nothing at its reservation.
func TestReportCostSettlesReservation(t *testing.T) {
	cfg := toolgate.Policy{Budget: 10 * kernel.Unit, MinCost: kernel.Unit / 10,
		Tools: []toolgate.Rule{{Match: "measured", Cost: 3 * kernel.Unit, Reserve: true},
			{Match: "silent", Cost: 2 * kernel.Unit, Reserve: true}}}
	g, log := newGate(t, cfg)
	silent := &fakeTool{name: "silent"}
	tn := newToolsNode(t, g, nil, &measuredTool{name: "measured"}, silent)
	_, err := tn.Invoke(context.Background(), calls(call("c1", "measured", `{"actual":1500,"id":"c1"}`), call("c2", "silent", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := g.Meter("")
	if got := m.Budget().Net(); got != 3500 {
		t.Fatalf("net spend %v, want 3.5 units (1.5 measured + 2 reserved)", got)
	}
	if eino.ReportCost(context.Background(), 1) {
		t.Fatal("ReportCost outside a gated call reported true")
	}
	checkLog(t, log, g, "")
}

// TestToolErrorIsRecordedAndPassedOn: a tool's error is recorded as the
// call's failure and reaches eino unchanged (which ends the run).
func TestToolErrorIsRecordedAndPassedOn(t *testing.T) {
	g, log := newGate(t, catalogue(10*kernel.Unit))
	boom := errors.New("disk on fire")
	read := &fakeTool{name: "read_file", run: func(context.Context, string) (string, error) { return "", boom }}
	tn := newToolsNode(t, g, nil, read)
	_, err := tn.Invoke(context.Background(), calls(call("c1", "read_file", `{}`)))
	if !errors.Is(err, boom) {
		t.Fatalf("Invoke error %v, want the tool's", err)
	}
	rs := results(t, log)
	if len(rs) != 1 || rs[0].OK || rs[0].Error != "disk on fire" {
		t.Fatalf("results %+v", rs)
	}
	checkLog(t, log, g, "")
}

// failingStore is a memory store whose appends fail once armed.
type failingStore struct {
	*trace.Memory
	fail atomic.Bool
}

func (f *failingStore) Append(ctx context.Context, es ...trace.Entry) error {
	if f.fail.Load() {
		return errors.New("disk full")
	}
	return f.Memory.Append(ctx, es...)
}

// TestUnrecordableCallsDoNotRun: when the gate cannot record a decision
// the call does not run and the model reads why; when it cannot record a
// result, the output is withheld and the run ends with the error.
func TestUnrecordableCallsDoNotRun(t *testing.T) {
	store := &failingStore{Memory: trace.NewMemory()}
	log, err := trace.NewLog(store)
	if err != nil {
		t.Fatal(err)
	}
	g, err := toolgate.New(context.Background(), log, mustCompile(catalogue(10*kernel.Unit)))
	if err != nil {
		t.Fatal(err)
	}
	var armAfterRun atomic.Bool
	read := &fakeTool{name: "read_file", run: func(context.Context, string) (string, error) {
		if armAfterRun.Load() {
			store.fail.Store(true)
		}
		return "secret", nil
	}}
	tn := newToolsNode(t, g, nil, read)
	ctx := context.Background()

	armAfterRun.Store(true)
	out, err := tn.Invoke(ctx, calls(call("c1", "read_file", `{}`)))
	if err == nil || !strings.Contains(err.Error(), "could not be recorded") || out != nil {
		t.Fatalf("unrecorded result: out %v, err %v", out, err)
	}

	armAfterRun.Store(false)
	out, err = tn.Invoke(ctx, calls(call("c2", "read_file", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	if read.runs.Load() != 1 || len(out) != 1 || !strings.HasPrefix(out[0].Content, `tool "read_file" was not run: `) ||
		!strings.Contains(out[0].Content, "disk full") {
		t.Fatalf("undecidable call: ran %d, answered %v", read.runs.Load(), out)
	}
}

// TestStreamClosedEarlyIsRecorded: a reader that closes a streamed output
// before its end leaves the call recorded as failed with what it read.
func TestStreamClosedEarlyIsRecorded(t *testing.T) {
	g, log := newGate(t, catalogue(10*kernel.Unit))
	st := &streamTool{name: "read_file", chunks: []string{"a", "b", "c", "d"}}
	mw := eino.Middleware(g)
	ep := mw.Streamable(func(ctx context.Context, in *compose.ToolInput) (*compose.StreamToolOutput, error) {
		sr, err := st.StreamableRun(ctx, in.Arguments)
		return &compose.StreamToolOutput{Result: sr}, err
	})
	out, err := ep(context.Background(), &compose.ToolInput{Name: "read_file", Arguments: `{}`, CallID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := out.Result.Recv(); err != nil || v != "a" {
		t.Fatalf("first chunk %q %v", v, err)
	}
	out.Result.Close()
	// The record is written once the relay notices; wait for it (a
	// loaded machine under -race may take a while to schedule it).
	for deadline := time.Now().Add(30 * time.Second); len(results(t, log)) != 1 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	rs := results(t, log)
	if len(rs) != 1 || rs[0].OK || !strings.Contains(rs[0].Error, "closed the output stream") || !strings.HasPrefix(rs[0].OutputText, "a") {
		t.Fatalf("results %+v", rs)
	}
	checkLog(t, log, g, "")
}

// TestComposeGraphApproval: in a plain compose graph with a checkpoint
// store, a DELETE-tier call interrupts the graph; resumed with the
// answer as resume data, it runs once.
func TestComposeGraphApproval(t *testing.T) {
	g, log := newGate(t, catalogue(10*kernel.Unit))
	del := &fakeTool{name: "delete_file"}
	tn := newToolsNode(t, g, nil, del)
	graph := compose.NewGraph[*schema.Message, []*schema.Message]()
	if err := graph.AddToolsNode("tools", tn); err != nil {
		t.Fatal(err)
	}
	if err := graph.AddEdge(compose.START, "tools"); err != nil {
		t.Fatal(err)
	}
	if err := graph.AddEdge("tools", compose.END); err != nil {
		t.Fatal(err)
	}
	ctx := eino.WithCaller(context.Background(), "ops")
	run, err := graph.Compile(ctx, compose.WithCheckPointStore(&memStore{}))
	if err != nil {
		t.Fatal(err)
	}
	msg := calls(call("c1", "delete_file", `{"path":"/x"}`))
	_, err = run.Invoke(ctx, msg, compose.WithCheckPointID("cp"))
	info, ok := compose.ExtractInterruptInfo(err)
	if !ok {
		t.Fatalf("not interrupted: %v", err)
	}
	ps := eino.PendingApprovals(info.InterruptContexts)
	if len(ps) != 1 || ps[0].Caller != "ops" || ps[0].Tier != claims.TierDelete || del.runs.Load() != 0 {
		t.Fatalf("pending %+v, delete ran %d", ps, del.runs.Load())
	}
	out, err := run.Invoke(compose.ResumeWithData(ctx, ps[0].InterruptID, &eino.Answer{Approved: true, Reason: "ok"}),
		msg, compose.WithCheckPointID("cp"))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].Content != `delete_file done: {"path":"/x"}` || del.runs.Load() != 1 {
		t.Fatalf("resumed: %v, delete ran %d", out, del.runs.Load())
	}
	checkLog(t, log, g, "ops")
}

// TestToolInterruptEndsGatedCall: a tool that interrupts the run itself
// ends its gated call (recorded as failed); the resumed call is a new
// call through the gate, whose approval-free rule lets it run.
func TestToolInterruptEndsGatedCall(t *testing.T) {
	g, log := newGate(t, catalogue(10*kernel.Unit))
	asker := &fakeTool{name: "read_file", run: func(ctx context.Context, _ string) (string, error) {
		if was, _, _ := tool.GetInterruptState[any](ctx); !was {
			return "", tool.Interrupt(ctx, "which file?")
		}
		if _, has, answer := tool.GetResumeContext[string](ctx); has {
			return "read " + answer, nil
		}
		return "", tool.Interrupt(ctx, "which file?")
	}}
	tn := newToolsNode(t, g, nil, asker)
	graph := compose.NewGraph[*schema.Message, []*schema.Message]()
	_ = graph.AddToolsNode("tools", tn)
	_ = graph.AddEdge(compose.START, "tools")
	_ = graph.AddEdge("tools", compose.END)
	ctx := context.Background()
	run, err := graph.Compile(ctx, compose.WithCheckPointStore(&memStore{}))
	if err != nil {
		t.Fatal(err)
	}
	msg := calls(call("c1", "read_file", `{}`))
	_, err = run.Invoke(ctx, msg, compose.WithCheckPointID("cp"))
	info, ok := compose.ExtractInterruptInfo(err)
	if !ok || len(info.InterruptContexts) != 1 || len(eino.PendingApprovals(info.InterruptContexts)) != 0 {
		t.Fatalf("interrupt %v %v", info, err)
	}
	out, err := run.Invoke(compose.ResumeWithData(ctx, info.InterruptContexts[0].ID, "/etc/hosts"), msg, compose.WithCheckPointID("cp"))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].Content != "read /etc/hosts" {
		t.Fatalf("resumed: %v", out)
	}
	rs := results(t, log)
	if len(rs) != 2 || rs[0].OK || !strings.HasPrefix(rs[0].Error, "interrupted: ") || !rs[1].OK {
		t.Fatalf("results %+v", rs)
	}
	checkLog(t, log, g, "")
}

// TestOptions: WithCallerFunc chooses the caller, WithApprover answers
// as the named approver.
func TestOptions(t *testing.T) {
	cfg := catalogue(10 * kernel.Unit)
	cfg.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"sre-lead"}}
	g, log := newGate(t, cfg)
	del := &fakeTool{name: "delete_file"}
	type tenantKey struct{}
	tn := newToolsNode(t, g, []eino.Option{
		eino.WithCallerFunc(func(ctx context.Context) string { s, _ := ctx.Value(tenantKey{}).(string); return s }),
		eino.WithApprover("sre-lead"),
	}, del)
	graph := compose.NewGraph[*schema.Message, []*schema.Message]()
	_ = graph.AddToolsNode("tools", tn)
	_ = graph.AddEdge(compose.START, "tools")
	_ = graph.AddEdge("tools", compose.END)
	ctx := context.WithValue(context.Background(), tenantKey{}, "acme")
	run, err := graph.Compile(ctx, compose.WithCheckPointStore(&memStore{}))
	if err != nil {
		t.Fatal(err)
	}
	msg := calls(call("c1", "delete_file", `{}`))
	_, err = run.Invoke(ctx, msg, compose.WithCheckPointID("cp"))
	info, _ := compose.ExtractInterruptInfo(err)
	ps := eino.PendingApprovals(info.InterruptContexts)
	if len(ps) != 1 || ps[0].Caller != "acme" || len(ps[0].Awaiting) != 1 || ps[0].Awaiting[0] != "sre-lead" {
		t.Fatalf("pending %+v", ps)
	}
	if ps[0].String() != ps[0].Question {
		t.Fatal("String is not the question")
	}
	if _, err := run.Invoke(compose.ResumeWithData(ctx, ps[0].InterruptID, eino.Approve("")), msg, compose.WithCheckPointID("cp")); err != nil {
		t.Fatal(err)
	}
	if del.runs.Load() != 1 {
		t.Fatalf("delete ran %d", del.runs.Load())
	}
	checkLog(t, log, g, "acme")
}
