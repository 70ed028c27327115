package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// chatServer is a chat completions endpoint that answers from a script
// of raw assistant messages and keeps every request's messages.
type chatServer struct {
	t     *testing.T
	turns []string

	mu       sync.Mutex
	requests [][]map[string]any
}

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/chat/completions" {
		s.t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		http.Error(w, "{}", http.StatusNotFound)
		return
	}
	var body struct {
		Messages []map[string]any `json:"messages"`
		Tools    []any            `json:"tools"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.t.Errorf("request body: %v", err)
	}
	if len(body.Tools) != 3 {
		s.t.Errorf("the request offers %d tools", len(body.Tools))
	}
	n := len(s.requests)
	s.requests = append(s.requests, body.Messages)
	if n >= len(s.turns) {
		s.t.Errorf("request %d is past the script", n)
		http.Error(w, `{"error":{"message":"past the script"}}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-%d","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",`+
		`"choices":[{"index":0,"finish_reason":"tool_calls","logprobs":null,"message":%s}],`+
		`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, n, s.turns[n])
}

// toolMessages returns request n's tool messages by call id, checking
// that each answers a call of the assistant message before it.
func (s *chatServer) toolMessages(n int) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	asked := map[string]bool{}
	for _, m := range s.requests[n] {
		switch m["role"] {
		case "assistant":
			calls, _ := m["tool_calls"].([]any)
			for _, c := range calls {
				id, _ := c.(map[string]any)["id"].(string)
				asked[id] = true
			}
		case "tool":
			id, _ := m["tool_call_id"].(string)
			if !asked[id] {
				s.t.Errorf("request %d answers call %q that no assistant message made", n, id)
			}
			content, _ := m["content"].(string)
			out[id] = content
		}
	}
	return out
}

func fn(id, name, args string) string {
	return fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":%q,"arguments":%q}}`, id, name, args)
}

func toolCalls(calls ...string) string {
	return `{"role":"assistant","content":null,"refusal":null,"tool_calls":[` + strings.Join(calls, ",") + `]}`
}

// TestLoopThroughGate points the SDK at a local server scripting the
// chat completions (no network, no model): the reads pass and their
// outputs go back as tool messages; the delete waits for the human, runs
// once when approved and never when denied; the restart the budget
// cannot pay and a tool outside the catalogue are refused, and the
// explanation goes back as the tool message; the log verifies and
// replays.
func TestLoopThroughGate(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(fmt.Sprintf("approve=%v", approve), func(t *testing.T) {
			srv := &chatServer{t: t, turns: []string{
				toolCalls(fn("call_1", "read_log", `{"service":"checkout"}`), fn("call_2", "read_log", `{"service":"payments"}`)),
				toolCalls(fn("call_3", "delete_file", `{"path":"/var/crash/core.1234"}`), fn("call_4", "drop_database", `{}`)),
				toolCalls(fn("call_5", "restart_service", `{"service":"checkout"}`)),
				`{"role":"assistant","content":"stopping: out of budget","refusal":null}`,
			}}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			client := openai.NewClient(option.WithBaseURL(hs.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
			ctx := context.Background()
			log := trace.NewMemoryLog()
			comp, err := config().Compile()
			if err != nil {
				t.Fatal(err)
			}
			g, err := toolgate.New(ctx, log, comp)
			if err != nil {
				t.Fatal(err)
			}
			ran := map[string]int{}
			var mu sync.Mutex
			counted := map[string]Tool{}
			for name, run := range tools() {
				counted[name] = func(ctx context.Context, args string) (string, error) {
					mu.Lock()
					ran[name]++
					mu.Unlock()
					return run(ctx, args)
				}
			}
			var questions []string
			ask := func(_ context.Context, q string) (bool, string) {
				questions = append(questions, q)
				return approve, "the human's reason"
			}

			answer, err := Loop(ctx, client, g, "alice", params("gpt-4o-mini"), counted, ask)
			if err != nil {
				t.Fatal(err)
			}
			if answer != "stopping: out of budget" {
				t.Fatalf("answer %q", answer)
			}
			if len(srv.requests) != 4 {
				t.Fatalf("%d requests, want 4", len(srv.requests))
			}
			if got := srv.toolMessages(1); got["call_1"] != "checkout: out of disk space writing /var/crash/core.1234" ||
				got["call_2"] != "payments: all requests OK" {
				t.Fatalf("the second request's tool messages %v", got)
			}
			if len(questions) != 1 || !strings.Contains(questions[0], `"delete_file"`) {
				t.Fatalf("questions %q", questions)
			}
			second := srv.toolMessages(2)
			if approve {
				if second["call_3"] != "deleted /var/crash/core.1234" || ran["delete_file"] != 1 {
					t.Fatalf("approved delete: ran %d, the model read %q", ran["delete_file"], second["call_3"])
				}
			} else if second["call_3"] != `tool "delete_file" (rule #2, approval): DELETE denied by human: the human's reason` || ran["delete_file"] != 0 {
				t.Fatalf("denied delete: ran %d, the model read %q", ran["delete_file"], second["call_3"])
			}
			if second["call_4"] != `tool "drop_database" is not in the gate's catalogue` {
				t.Fatalf("the model read %q for the unknown tool", second["call_4"])
			}
			refusal := srv.toolMessages(3)["call_5"]
			if !strings.HasPrefix(refusal, `tool "restart_service" (rule #1, kernel): action "restart_service" rejected: budget: cost 2, remaining `) || ran["restart_service"] != 0 {
				t.Fatalf("restart: ran %d, the model read %q", ran["restart_service"], refusal)
			}
			if ran["read_log"] != 2 {
				t.Fatalf("read_log ran %d times", ran["read_log"])
			}

			if _, err := log.Verify(ctx); err != nil {
				t.Fatal(err)
			}
			s, err := kernel.Replay(ctx, log, g.Kernel(), g.SessionID("alice"))
			if err != nil {
				t.Fatal(err)
			}
			m, _ := g.Meter("alice")
			want := kernel.Unit // two reads
			if approve {
				want += kernel.Unit // and the delete
			}
			if s.Meter().Budget().Net() != want || m.Budget().Net() != want {
				t.Fatalf("spent %v (replayed %v), want %v", m.Budget().Net(), s.Meter().Budget().Net(), want)
			}
		})
	}
}

// TestLoopEndsWhenTheModelFails: an error of the API ends the loop with
// it; nothing ran.
func TestLoopEndsWhenTheModelFails(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	defer hs.Close()
	client := openai.NewClient(option.WithBaseURL(hs.URL), option.WithAPIKey("wrong"), option.WithMaxRetries(0))
	comp, err := config().Compile()
	if err != nil {
		t.Fatal(err)
	}
	g, err := toolgate.New(context.Background(), trace.NewMemoryLog(), comp)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Loop(context.Background(), client, g, "alice", params("gpt-4o-mini"), tools(), nil)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("err %v, want the API's 401", err)
	}
	if _, ok := g.Meter("alice"); ok {
		t.Fatal("a call was made")
	}
}

// TestOpenAILoop runs the program against its scripted model with each
// answer and checks what it says happened.
func TestOpenAILoop(t *testing.T) {
	for _, tc := range []struct {
		approve bool
		want    []string
	}{
		{true, []string{
			"model reads call_3: deleted /var/crash/core.1234",
			`model reads call_4: tool "restart_service" (rule #1, kernel): action "restart_service" rejected: budget: cost 2, remaining 0.5`,
			"budget: spent 2 of 2.5 in 3 calls",
			"replay rebuilt the budget: spent 2 in 3 calls",
		}},
		{false, []string{
			`model reads call_3: tool "delete_file" (rule #2, approval): DELETE denied by human: no`,
			`model reads call_4: tool "restart_service" (rule #1, kernel): action "restart_service" rejected: budget: cost 2, remaining 1.5`,
			"budget: spent 1 of 2.5 in 2 calls",
			"replay rebuilt the budget: spent 1 in 2 calls",
		}},
	} {
		var out bytes.Buffer
		ask := func(context.Context, string) (bool, string) {
			if tc.approve {
				return true, "yes"
			}
			return false, "no"
		}
		keep := filepath.Join(t.TempDir(), "loop.trace")
		if err := run(context.Background(), &out, "", "", "", keep, ask); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		s := out.String()
		// The log is kept in the file named by -log, whole and verified.
		f, err := trace.OpenFileReadOnly(keep)
		if err != nil {
			t.Fatal(err)
		}
		h, err := f.Head(context.Background())
		f.Close()
		if err != nil || !strings.Contains(s, fmt.Sprintf("log: %d entries verified", h.Size)) || !strings.Contains(s, "log kept in "+keep) {
			t.Errorf("kept log: %d entries, %v; the run printed\n%s", h.Size, err, s)
		}
		if err := run(context.Background(), &bytes.Buffer{}, "", "", "", keep, ask); err == nil || !strings.Contains(err.Error(), "new log") {
			t.Errorf("a second run on the kept log: %v", err)
		}
		for _, want := range append([]string{
			"model reads call_1: checkout: out of disk space",
			"model reads call_2: payments: all requests OK",
			"model: Checkout was out of disk",
			"entries verified",
		}, tc.want...) {
			if !strings.Contains(s, want) {
				t.Errorf("approve=%v: output lacks %q\n%s", tc.approve, want, s)
			}
		}
	}
}
