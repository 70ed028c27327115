// Command adkagent runs an agent built with Google's Agent Development Kit
// for Go whose every tool call passes through Verity's tool gate
// (kernel/toolgate/adk): a housekeeping agent frees disk space on a host.
//
//  1. It lists two directories at once (ADK runs the calls of one model
//     turn concurrently); both are cheap and run.
//  2. It deletes a file: a DELETE-tier call, which waits for a human
//     through ADK's confirmation flow. The answer (-approve) becomes the
//     claims approval; the call runs once when confirmed, never when
//     rejected.
//  3. It sends two reports at once; the budget has room for one. The
//     other is refused, and the model reads the gate's explanation as the
//     tool's error.
//  4. The log verifies, and the caller's kernel session replays from it
//     to the gate's spend.
//
// The model is a scripted stand-in (no network, no API key): it plays the
// same turns every time. Run it with
//
//	go run . -approve yes
//
// from this directory; -approve ask reads the answer from standard input,
// -log keeps the trace log in a file of your choice.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
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

const (
	appName   = "housekeeping"
	userID    = "ops"
	sessionID = "host-42"
)

func main() {
	if err := run(context.Background(), os.Stdout, os.Stdin, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "adkagent:", err)
		os.Exit(1)
	}
}

// run is the program: flags in args, the human's answers (for -approve
// ask) on in, the transcript on out.
func run(ctx context.Context, out io.Writer, in io.Reader, args []string) error {
	fs := flag.NewFlagSet("adkagent", flag.ContinueOnError)
	fs.SetOutput(out)
	approve := fs.String("approve", "ask", "the human's answer to the delete: yes, no, or ask (read it from standard input)")
	logPath := fs.String("log", "", "the trace log file (default: a new file in a temporary directory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	answer, err := answerer(*approve, in, out)
	if err != nil {
		return err
	}
	if *logPath == "" {
		dir, err := os.MkdirTemp("", "adkagent-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*logPath = filepath.Join(dir, "agent.log")
	}
	store, err := trace.OpenFile(*logPath, trace.FileOptions{})
	if err != nil {
		return err
	}
	log, err := trace.NewLog(store)
	if err != nil {
		return err
	}
	defer log.Close()

	// The gate: what each tool costs, which needs a human, the budget.
	comp, err := toolgate.Policy{
		Budget:  5 * kernel.Unit,
		MinCost: kernel.Unit / 100,
		Tools: []toolgate.Rule{
			{Match: "list_files", Cost: kernel.Unit / 10, Description: "lists a directory"},
			{Match: "delete_file", Cost: kernel.Unit / 2, Tier: claims.TierDelete, Description: "deletes a file for good"},
			{Match: "send_report", Cost: 3 * kernel.Unit, Description: "emails a report"},
		},
	}.Compile()
	if err != nil {
		return err
	}
	gate, err := toolgate.New(ctx, log, comp)
	if err != nil {
		return err
	}
	guard, err := adk.New(gate)
	if err != nil {
		return err
	}
	guardPlugin, err := guard.Plugin()
	if err != nil {
		return err
	}

	host := newHost()
	tools, err := host.tools()
	if err != nil {
		return err
	}
	a, err := llmagent.New(llmagent.Config{
		Name:        "housekeeper",
		Description: "keeps hosts tidy",
		Instruction: "Free disk space, then report what you did.",
		Model:       scriptedModel(),
		Tools:       tools,
	})
	if err != nil {
		return err
	}
	// The guard as a runner plugin: it sees every tool call of every
	// agent this runner runs.
	r, err := runner.New(runner.Config{
		AppName:           appName,
		Agent:             a,
		SessionService:    session.InMemoryService(),
		AutoCreateSession: true,
		PluginConfig:      runner.PluginConfig{Plugins: []*plugin.Plugin{guardPlugin}},
	})
	if err != nil {
		return err
	}

	msg := genai.NewContentFromText("The disk of host-42 is full. Free some space and report.", genai.RoleUser)
	fmt.Fprintln(out, "user:", msg.Parts[0].Text)
	for msg != nil {
		var pending []*genai.FunctionCall
		for ev, err := range r.Run(ctx, userID, sessionID, msg, agent.RunConfig{}) {
			if err != nil {
				return err
			}
			pending = append(pending, show(out, ev)...)
		}
		msg = nil
		if len(pending) > 0 {
			// ADK stopped the turn to ask; answer as a client does, with
			// a FunctionResponse for each adk_request_confirmation call.
			parts := make([]*genai.Part, 0, len(pending))
			for _, fc := range pending {
				yes, err := answer(fc)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "human: %s\n", map[bool]string{true: "yes", false: "no"}[yes])
				parts = append(parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{
					ID: fc.ID, Name: toolconfirmation.FunctionCallName, Response: map[string]any{"confirmed": yes},
				}})
			}
			msg = &genai.Content{Role: genai.RoleUser, Parts: parts}
		}
	}

	fmt.Fprintf(out, "host: deleted %v\n", host.deletedFiles())
	return audit(ctx, out, log, gate)
}

// audit verifies the log and replays the caller's kernel session from it.
func audit(ctx context.Context, out io.Writer, log *trace.Log, gate *toolgate.Gate) error {
	var entries []trace.Entry
	counts := map[string]int{}
	for e, err := range log.Entries(ctx, 0) {
		if err != nil {
			return err
		}
		entries = append(entries, e)
		counts[e.Kind]++
	}
	if _, err := trace.Verify(entries); err != nil {
		return fmt.Errorf("the log does not verify: %w", err)
	}
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, fmt.Sprintf("%s×%d", k, counts[k]))
	}
	sort.Strings(kinds)
	fmt.Fprintf(out, "log: %d entries, chain verified (%s)\n", len(entries), strings.Join(kinds, ", "))

	caller := adk.SessionCaller(appName, userID, sessionID)
	replayed, err := kernel.Replay(ctx, log, gate.Kernel(), gate.SessionID(caller))
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	live, ok := gate.Meter(caller)
	if !ok {
		return errors.New("the caller made no call")
	}
	b := replayed.Meter().Budget()
	if b.Net() != live.Budget().Net() || replayed.Meter().Steps() != live.Steps() {
		return fmt.Errorf("replay differs: spent %v in %d steps, the gate %v in %d", b.Net(), replayed.Meter().Steps(), live.Budget().Net(), live.Steps())
	}
	fmt.Fprintf(out, "replay of %s: spent %v of %v in %d calls, equal to the live gate\n", caller, b.Net(), b.Limit(), replayed.Meter().Steps())
	return nil
}

// show prints an event and returns the confirmation requests it holds.
func show(out io.Writer, ev *session.Event) []*genai.FunctionCall {
	if ev.Content == nil {
		return nil
	}
	var pending []*genai.FunctionCall
	for _, p := range ev.Content.Parts {
		switch {
		case p.FunctionCall != nil && p.FunctionCall.Name == toolconfirmation.FunctionCallName:
			fmt.Fprintf(out, "adk asks: %s\n", confirmationHint(p.FunctionCall))
			pending = append(pending, p.FunctionCall)
		case p.FunctionCall != nil:
			fmt.Fprintf(out, "model calls %s %s\n", p.FunctionCall.Name, jsonText(p.FunctionCall.Args))
		case p.FunctionResponse != nil:
			resp := p.FunctionResponse.Response
			if _, asks := ev.Actions.RequestedToolConfirmations[p.FunctionResponse.ID]; asks {
				fmt.Fprintf(out, "  %s waits for a human\n", p.FunctionResponse.Name)
			} else if e, ok := resp["error"].(string); ok {
				fmt.Fprintf(out, "  %s refused: %s\n", p.FunctionResponse.Name, e)
			} else {
				fmt.Fprintf(out, "  %s → %s\n", p.FunctionResponse.Name, jsonText(resp))
			}
		case p.Text != "":
			fmt.Fprintf(out, "model: %s\n", p.Text)
		}
	}
	return pending
}

// confirmationHint reads the hint of an adk_request_confirmation call
// (its toolConfirmation argument; the guard puts the gate's question
// there).
func confirmationHint(fc *genai.FunctionCall) string {
	var tc toolconfirmation.ToolConfirmation
	b, err := json.Marshal(fc.Args["toolConfirmation"])
	if err == nil {
		err = json.Unmarshal(b, &tc)
	}
	if err != nil {
		return fmt.Sprintf("(unreadable confirmation request: %v)", err)
	}
	return tc.Hint
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// answerer returns how the human answers a confirmation request.
func answerer(mode string, in io.Reader, out io.Writer) (func(*genai.FunctionCall) (bool, error), error) {
	switch mode {
	case "yes":
		return func(*genai.FunctionCall) (bool, error) { return true, nil }, nil
	case "no":
		return func(*genai.FunctionCall) (bool, error) { return false, nil }, nil
	case "ask":
		br := bufio.NewReader(in)
		return func(*genai.FunctionCall) (bool, error) {
			fmt.Fprint(out, "approve? [y/N] ")
			line, err := br.ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				return false, err
			}
			fmt.Fprintln(out)
			line = strings.ToLower(strings.TrimSpace(line))
			return line == "y" || line == "yes", nil
		}, nil
	}
	return nil, fmt.Errorf("-approve must be yes, no or ask, not %q", mode)
}

// host is the pretend machine the tools act on.
type host struct {
	mu      sync.Mutex
	files   map[string][]string
	deleted []string
}

func newHost() *host {
	return &host{files: map[string][]string{
		"/var/log": {"/var/log/app.log.1", "/var/log/syslog"},
		"/tmp":     {"/tmp/build-cache.tar"},
	}}
}

func (h *host) deletedFiles() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string{}, h.deleted...)
}

type dirArgs struct {
	Dir string `json:"dir"`
}

type pathArgs struct {
	Path string `json:"path"`
}

type reportArgs struct {
	To   string `json:"to"`
	Body string `json:"body"`
}

func (h *host) tools() ([]tool.Tool, error) {
	list, err := functiontool.New(functiontool.Config{Name: "list_files", Description: "lists the files of a directory"},
		func(_ agent.Context, a dirArgs) (map[string]any, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			return map[string]any{"files": h.files[a.Dir]}, nil
		})
	if err != nil {
		return nil, err
	}
	del, err := functiontool.New(functiontool.Config{Name: "delete_file", Description: "deletes a file"},
		func(_ agent.Context, a pathArgs) (map[string]any, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.deleted = append(h.deleted, a.Path)
			return map[string]any{"deleted": a.Path}, nil
		})
	if err != nil {
		return nil, err
	}
	send, err := functiontool.New(functiontool.Config{Name: "send_report", Description: "emails a report"},
		func(_ agent.Context, a reportArgs) (map[string]any, error) {
			return map[string]any{"sent_to": a.To}, nil
		})
	if err != nil {
		return nil, err
	}
	return []tool.Tool{list, del, send}, nil
}

// script is the stand-in model (ADK's model.LLM): each request it gets
// plays its next step, a batch of function calls; when the steps are
// used up it answers with what the last tool results said.
type script struct {
	mu    sync.Mutex
	steps [][]*genai.FunctionCall
}

var _ model.LLM = (*script)(nil)

func scriptedModel() *script {
	fc := func(id, name string, args map[string]any) *genai.FunctionCall {
		return &genai.FunctionCall{ID: id, Name: name, Args: args}
	}
	return &script{steps: [][]*genai.FunctionCall{
		{fc("ls-log", "list_files", map[string]any{"dir": "/var/log"}), fc("ls-tmp", "list_files", map[string]any{"dir": "/tmp"})},
		{fc("rm-1", "delete_file", map[string]any{"path": "/var/log/app.log.1"})},
		{fc("mail-ops", "send_report", map[string]any{"to": "ops@example.com", "body": "freed space on host-42"}),
			fc("mail-cto", "send_report", map[string]any{"to": "cto@example.com", "body": "freed space on host-42"})},
	}}
}

func (s *script) Name() string { return "scripted-housekeeper" }

func (s *script) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		s.mu.Lock()
		var step []*genai.FunctionCall
		if len(s.steps) > 0 {
			step, s.steps = s.steps[0], s.steps[1:]
		}
		s.mu.Unlock()
		if step == nil {
			yield(&model.LLMResponse{Content: genai.NewContentFromText(summary(req), genai.RoleModel)}, nil)
			return
		}
		parts := make([]*genai.Part, len(step))
		for i, fc := range step {
			cp := *fc
			parts[i] = &genai.Part{FunctionCall: &cp}
		}
		yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: parts}}, nil)
	}
}

// summary is the model's last word: what it read in the last tool
// results, refusals included.
func summary(req *model.LLMRequest) string {
	if len(req.Contents) == 0 {
		return "Nothing to report."
	}
	var said []string
	for _, p := range req.Contents[len(req.Contents)-1].Parts {
		if fr := p.FunctionResponse; fr != nil {
			if e, ok := fr.Response["error"].(string); ok {
				said = append(said, fmt.Sprintf("%s was refused (%s)", fr.Name, e))
			} else {
				said = append(said, fmt.Sprintf("%s succeeded", fr.Name))
			}
		}
	}
	if len(said) == 0 {
		return "Done."
	}
	return "Done: " + strings.Join(said, "; ") + "."
}
