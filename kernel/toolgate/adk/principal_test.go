package adk_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/adk"
)

// TestPrincipalReachesGate: the guard passes each call's principal to the
// gate — the ADK app and user by default, the host's
// toolgate.WithPrincipal when the run's context carries one. The guard
// here leaves the caller key empty, so the gate charges the call to the
// principal's key, and the principal is found by its meter.
func TestPrincipalReachesGate(t *testing.T) {
	authenticated := toolgate.Principal{Issuer: "https://id.example", Subject: "bob", Groups: []string{"eng"}}
	tests := []struct {
		name string
		ctx  context.Context
		want toolgate.Principal
	}{
		{"ADKUser", context.Background(), toolgate.Principal{Issuer: "adk:" + appName, Subject: userID}},
		{"HostPrincipal", toolgate.WithPrincipal(context.Background(), authenticated), authenticated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log := newLog(t)
			g := newGate(t, log, testConfig())
			var seen []toolgate.Principal
			guard, err := adk.New(g,
				adk.WithCaller(func(agent.ReadonlyContext) string { return "" }),
				adk.WithPrincipal(func(ctx agent.ReadonlyContext) toolgate.Principal {
					p := adk.SessionPrincipal(ctx)
					seen = append(seen, p)
					return p
				}))
			require.NoError(t, err)
			ts := &tools{}
			cfg := llmagent.Config{Name: "assistant", Tools: ts.list(t),
				Model: newScript("scripted", []*genai.FunctionCall{call("c1", "read_file", map[string]any{"path": "/etc/motd"})})}
			guard.Install(&cfg)
			a, err := llmagent.New(cfg)
			require.NoError(t, err)
			r, err := runner.New(runner.Config{AppName: appName, Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})
			require.NoError(t, err)
			sess := sessionName(t)
			for _, err := range r.Run(tc.ctx, userID, sess, genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
				require.NoError(t, err)
			}
			assert.EqualValues(t, 1, ts.reads.Load())
			require.Len(t, seen, 1)
			assert.Equal(t, tc.want, seen[0])
			m, ok := g.Meter(tc.want.Key())
			require.True(t, ok, "the gate charged the call to the principal %q", tc.want.Key())
			assert.Equal(t, testConfig().Tools[0].Cost, m.Budget().Net())
			checkLog(t, log, g, tc.want.Key())
		})
	}
}

// TestPrincipalsRuleSeesTheADKUser: a rule limited to the ADK app's user
// alice applies to her runs, and not to a run whose context carries
// another principal: what the guard passes is what the gate decides on.
func TestPrincipalsRuleSeesTheADKUser(t *testing.T) {
	cfg := testConfig()
	cfg.Tools[0].Principals = &toolgate.PrincipalCondition{Issuers: []string{"adk:" + appName}, Subjects: []string{userID}}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		runs int64
	}{
		{"ADKUser", context.Background(), 1},
		{"OtherPrincipal", toolgate.WithPrincipal(context.Background(), toolgate.Principal{Issuer: "https://id.example", Subject: userID}), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate(t, newLog(t), cfg)
			guard, err := adk.New(g)
			require.NoError(t, err)
			ts := &tools{}
			acfg := llmagent.Config{Name: "assistant", Tools: ts.list(t),
				Model: newScript("scripted", []*genai.FunctionCall{call("c1", "read_file", map[string]any{"path": "/etc/motd"})})}
			guard.Install(&acfg)
			a, err := llmagent.New(acfg)
			require.NoError(t, err)
			r, err := runner.New(runner.Config{AppName: appName, Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})
			require.NoError(t, err)
			var events []*session.Event
			for ev, err := range r.Run(tc.ctx, userID, sessionName(t), genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
				require.NoError(t, err)
				events = append(events, ev)
			}
			assert.Equal(t, tc.runs, ts.reads.Load())
			if tc.runs == 0 {
				resp := functionResponses(events, "read_file")
				require.Len(t, resp, 1)
				assert.Contains(t, fmt.Sprint(resp[0]), `tool "read_file": no rule admits the call: rule #0 (principals: the principal is not admitted)`)
			}
		})
	}
}
