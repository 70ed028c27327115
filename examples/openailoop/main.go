// Command openailoop puts a Verity tool gate (kernel/toolgate) into the
// agent loop of a plain model SDK, github.com/openai/openai-go, which has
// no tool hooks: the host's loop (Loop, in loop.go) runs each of the
// model's tool calls through the gate itself.
//
// By default the model is a script served on a local port, so the program
// needs no network and no key:
//
//  1. Two log reads in one answer pass.
//  2. Deleting a core dump is a DELETE-tier call: you are asked (y or n);
//     it runs once if you say yes, never if you say no, and the model
//     reads the denial.
//  3. A restart costs more than the budget has left: it is refused, and
//     the refusal goes back to the model as the call's tool message.
//  4. The log verifies, and the caller's budget is rebuilt from it.
//
// Run it with
//
//	go run . [-yes] [-log FILE]
//
// (-log keeps the log in a new file: `go run ../verity verify FILE` checks it)
// or against an OpenAI-compatible endpoint (OPENAI_API_KEY in the
// environment) with -base-url and -model.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

func main() {
	baseURL := flag.String("base-url", "", "an OpenAI-compatible endpoint (default: the scripted model on a local port)")
	model := flag.String("model", "gpt-4o-mini", "the model to ask at -base-url")
	yes := flag.Bool("yes", false, "approve without asking")
	keep := flag.String("log", "", "keep the log in this new `file` (default: in memory)")
	flag.Parse()
	in := bufio.NewScanner(os.Stdin)
	ask := func(_ context.Context, q string) (bool, string) {
		fmt.Printf("human, %s [y/N] ", q)
		if *yes {
			fmt.Println("y")
			return true, "approved with -yes"
		}
		ans := "n"
		if in.Scan() {
			ans = strings.TrimSpace(in.Text())
		}
		fmt.Println(ans)
		if ans == "y" || ans == "yes" {
			return true, "approved at the prompt"
		}
		return false, "keep it for the post-mortem"
	}
	if err := run(context.Background(), os.Stdout, *baseURL, os.Getenv("OPENAI_API_KEY"), *model, *keep, ask); err != nil {
		fmt.Fprintln(os.Stderr, "openailoop:", err)
		os.Exit(1)
	}
}

const caller = "oncall-1"

// config is the gate's catalogue: what each tool costs and which need a
// human.
func config() toolgate.Policy {
	return toolgate.Policy{
		Budget:  5 * kernel.Unit / 2,
		MinCost: kernel.Unit / 100,
		Tools: []toolgate.Rule{
			{Match: "read_log", Cost: kernel.Unit / 2},
			{Match: "restart_service", Cost: 2 * kernel.Unit},
			{Match: "delete_file", Cost: kernel.Unit, Tier: claims.TierDelete},
		},
	}
}

// tools are the host's tools. They only say what they would do.
func tools() map[string]Tool {
	arg := func(args, key string) string {
		var m map[string]string
		_ = json.Unmarshal([]byte(args), &m)
		return m[key]
	}
	return map[string]Tool{
		"read_log": func(_ context.Context, args string) (string, error) {
			if s := arg(args, "service"); s != "checkout" {
				return s + ": all requests OK", nil
			}
			return "checkout: out of disk space writing /var/crash/core.1234", nil
		},
		"restart_service": func(_ context.Context, args string) (string, error) {
			return arg(args, "service") + " restarted", nil
		},
		"delete_file": func(_ context.Context, args string) (string, error) {
			return "deleted " + arg(args, "path"), nil
		},
	}
}

// params is the conversation's start and the tools the model may call.
func params(model string) openai.ChatCompletionNewParams {
	fn := func(name, desc, param string) openai.ChatCompletionToolUnionParam {
		return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: name, Description: openai.String(desc),
			Parameters: shared.FunctionParameters{"type": "object", "required": []string{param},
				"properties": map[string]any{param: map[string]string{"type": "string"}}},
		})
	}
	return openai.ChatCompletionNewParams{
		Model: shared.ChatModel(model),
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are on call for the checkout service."),
			openai.UserMessage("checkout is failing; fix it"),
		},
		Tools: []openai.ChatCompletionToolUnionParam{
			fn("read_log", "read a service's recent log", "service"),
			fn("restart_service", "restart a service", "service"),
			fn("delete_file", "delete a file", "path"),
		},
	}
}

// openLog returns a log in memory, or in keep, a new file.
func openLog(keep string) (*trace.Log, error) {
	if keep == "" {
		return trace.NewMemoryLog(), nil
	}
	if _, err := os.Lstat(keep); !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("-log %s: the loop writes a new log; give a path where no file is", keep)
	}
	f, err := trace.OpenFile(keep, trace.FileOptions{})
	if err != nil {
		return nil, err
	}
	log, err := trace.NewLog(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return log, nil
}

// run is the program; keep, if not empty, is a new file to keep the log in.
func run(ctx context.Context, w io.Writer, baseURL, apiKey, model, keep string, ask Ask) error {
	log, err := openLog(keep)
	if err != nil {
		return err
	}
	defer log.Close()
	if baseURL == "" {
		srv := httptest.NewServer(scripted(w, demoTurns))
		defer srv.Close()
		baseURL, apiKey, model = srv.URL, "offline", "scripted"
	}
	client := openai.NewClient(option.WithBaseURL(baseURL), option.WithAPIKey(apiKey), option.WithMaxRetries(0))
	comp, err := config().Compile()
	if err != nil {
		return err
	}
	g, err := toolgate.New(ctx, log, comp)
	if err != nil {
		return err
	}
	answer, err := Loop(ctx, client, g, caller, params(model), tools(), ask)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "model:", answer)

	m, _ := g.Meter(caller)
	fmt.Fprintf(w, "budget: spent %s of %s in %d calls\n", m.Budget().Net(), m.Budget().Limit(), m.Steps())
	head, err := log.Verify(ctx)
	if err != nil {
		return err
	}
	s, err := kernel.Replay(ctx, log, g.Kernel(), g.SessionID(caller))
	if err != nil {
		return err
	}
	if s.Meter().Budget().Net() != m.Budget().Net() || s.Meter().Steps() != m.Steps() {
		return fmt.Errorf("replay rebuilt %v, the loop ended at %v", s.Meter(), m)
	}
	fmt.Fprintf(w, "log: %d entries verified; replay rebuilt the budget: spent %s in %d calls\n",
		head.Size, s.Meter().Budget().Net(), s.Meter().Steps())
	if keep != "" {
		if err := log.Close(); err != nil {
			return err
		}
		fmt.Fprintf(w, "log kept in %s\n", keep)
	}
	return nil
}

// demoTurns are the scripted model's answers: raw chat completion
// messages, as the API sends them.
var demoTurns = []string{
	`{"role":"assistant","content":null,"tool_calls":[
		{"id":"call_1","type":"function","function":{"name":"read_log","arguments":"{\"service\":\"checkout\"}"}},
		{"id":"call_2","type":"function","function":{"name":"read_log","arguments":"{\"service\":\"payments\"}"}}]}`,
	`{"role":"assistant","content":null,"tool_calls":[
		{"id":"call_3","type":"function","function":{"name":"delete_file","arguments":"{\"path\":\"/var/crash/core.1234\"}"}}]}`,
	`{"role":"assistant","content":null,"tool_calls":[
		{"id":"call_4","type":"function","function":{"name":"restart_service","arguments":"{\"service\":\"checkout\"}"}}]}`,
	`{"role":"assistant","content":"Checkout was out of disk; the restart was refused by the budget, so I stopped."}`,
}

// scripted serves the chat completions endpoint from fixed turns,
// printing the tool messages each request brings and the calls each
// answer makes.
func scripted(w io.Writer, turns []string) http.Handler {
	var mu sync.Mutex
	n := 0
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var req struct {
			Messages []struct {
				Role       string `json:"role"`
				Content    any    `json:"content"`
				ToolCallID string `json:"tool_call_id"`
			} `json:"messages"`
		}
		if r.URL.Path != "/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || n >= len(turns) {
			http.Error(rw, `{"error":{"message":"not in the script"}}`, http.StatusBadRequest)
			return
		}
		start := len(req.Messages)
		for start > 0 && req.Messages[start-1].Role == "tool" {
			start--
		}
		for _, m := range req.Messages[start:] {
			fmt.Fprintf(w, "  model reads %s: %v\n", m.ToolCallID, m.Content)
		}
		var msg struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
		}
		if err := json.Unmarshal([]byte(turns[n]), &msg); err != nil {
			http.Error(rw, err.Error(), http.StatusInternalServerError)
			return
		}
		for _, c := range msg.ToolCalls {
			fmt.Fprintf(w, "model calls %s %s %s\n", c.ID, c.Function.Name, c.Function.Arguments)
		}
		finish := "stop"
		if len(msg.ToolCalls) > 0 {
			finish = "tool_calls"
		}
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(rw, `{"id":"chatcmpl-%d","object":"chat.completion","created":0,"model":"scripted",`+
			`"choices":[{"index":0,"finish_reason":%q,"message":%s}]}`, n, finish, turns[n])
		n++
	})
}
