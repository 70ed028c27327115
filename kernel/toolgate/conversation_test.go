package toolgate_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// TestConversationLabelsMatchAModel: under conversation_labels, a pull
// request is refused exactly when the labels of its conversation, with
// those attached in no conversation, hold both flow labels — against a
// naive model of a label set per conversation, whatever the sequence of
// calls in conversations (two long handles that share their first 128
// bytes among them), declassifications and restarts; a gate restarted
// over the log decides the same. Without conversation_labels the
// conversation changes nothing: every call sees the caller's labels.
func TestConversationLabelsMatchAModel(t *testing.T) {
	checks := 0
	defer func() { t.Logf("%d checks", checks) }()
	long := strings.Repeat("c", 128)
	convs := []string{"", "A", "B", long + "1", long + "2"}
	rapid.Check(t, func(t *rapid.T) {
		perConversation := rapid.Bool().Draw(t, "conversation_labels")
		cfg := labelPolicy(0, 0)
		cfg.Version = 2
		cfg.ConversationLabels = perConversation
		log, err := trace.NewLog(trace.NewMemory())
		require.NoError(t, err)
		g, err := toolgate.New(ctx, log, mustCompile(cfg))
		require.NoError(t, err)
		model := map[string]map[string]bool{} // conversation → labels
		scope := func(conv string) string {
			if !perConversation {
				return ""
			}
			return conv
		}
		sees := func(conv, lb string) bool { return model[""][lb] || model[scope(conv)][lb] }
		call := func(g *toolgate.Gate, tool, conv string) toolgate.Verdict {
			d, err := g.Before(ctx, toolgate.Call{Tool: tool, Caller: "agent", Conversation: conv, Arguments: []byte(`{}`)})
			require.NoError(t, err)
			if d.Verdict == toolgate.Allow {
				_, err = g.After(ctx, d.Call, toolgate.Result{})
				require.NoError(t, err)
			}
			return d.Verdict
		}
		attach := func(tool, lb string) func(*rapid.T) {
			return func(t *rapid.T) {
				conv := rapid.SampledFrom(convs).Draw(t, "conversation")
				require.Equal(t, toolgate.Allow, call(g, tool, conv))
				if model[scope(conv)] == nil {
					model[scope(conv)] = map[string]bool{}
				}
				model[scope(conv)][lb] = true
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"issue":   attach("get_issue", "untrusted_input"),
			"private": attach("read_private", "private_data"),
			"declassify": func(t *rapid.T) {
				lb := rapid.SampledFrom([]string{"untrusted_input", "private_data"}).Draw(t, "label")
				carried := false
				for _, ls := range model {
					carried = carried || ls[lb]
				}
				err := g.Declassify(ctx, "agent", lb, "", &toolgate.Principal{Issuer: "idp", Subject: "sue", Groups: []string{"sec"}}, "reviewed")
				if !carried {
					require.Error(t, err)
					return
				}
				require.NoError(t, err)
				for _, ls := range model {
					delete(ls, lb)
				}
			},
			"restart": func(t *rapid.T) {
				g, err = toolgate.New(ctx, log, mustCompile(cfg))
				require.NoError(t, err)
			},
			"": func(t *rapid.T) {
				checks++
				conv := rapid.SampledFrom(convs).Draw(t, "pr_conversation")
				want := toolgate.Allow
				if sees(conv, "untrusted_input") && sees(conv, "private_data") {
					want = toolgate.Refuse
				}
				require.Equal(t, want, call(g, "create_pull_request", conv), "in %q, model %v", conv, model)
				g, err = toolgate.New(ctx, log, mustCompile(cfg))
				require.NoError(t, err)
				require.Equal(t, want, call(g, "create_pull_request", conv), "replayed, in %q, model %v", conv, model)
			},
		})
	})
}

// TestConversationsBeyondTheBoundAreLabelledCallerWide: a caller's
// conversations with labels of their own are bounded (1024); the labels
// of a call in a further one are attached caller-wide, to every
// conversation — stricter, never looser — and replay agrees.
func TestConversationsBeyondTheBoundAreLabelledCallerWide(t *testing.T) {
	cfg := labelPolicy(0, 0)
	cfg.Version = 2
	cfg.ConversationLabels = true
	cfg.Budget = units(100)
	log, err := trace.NewLog(trace.NewMemory())
	require.NoError(t, err)
	g, err := toolgate.New(ctx, log, mustCompile(cfg))
	require.NoError(t, err)
	call := func(g *toolgate.Gate, tool, conv string) toolgate.Verdict {
		d, err := g.Before(ctx, toolgate.Call{Tool: tool, Caller: "agent", Conversation: conv, Arguments: []byte(`{}`)})
		require.NoError(t, err)
		if d.Verdict == toolgate.Allow {
			_, err = g.After(ctx, d.Call, toolgate.Result{})
			require.NoError(t, err)
		}
		return d.Verdict
	}
	for i := range 1024 {
		require.Equal(t, toolgate.Allow, call(g, "get_issue", "c"+strconv.Itoa(i)))
	}
	require.Equal(t, toolgate.Allow, call(g, "read_private", "c1024"), "the 1025th conversation")
	for _, g := range []*toolgate.Gate{g, func() *toolgate.Gate {
		g, err := toolgate.New(ctx, log, mustCompile(cfg))
		require.NoError(t, err)
		return g
	}()} {
		require.Equal(t, toolgate.Refuse, call(g, "create_pull_request", "c0"), "its private_data counts in c0")
		require.Equal(t, toolgate.Allow, call(g, "create_pull_request", "fresh"), "a fresh conversation has only private_data")
	}
}
