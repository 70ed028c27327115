package adk_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/toolconfirmation"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/adk"
	"github.com/verity-go/verity/trace"
)

// toolCtx is a tool context as ADK hands one to a tool callback
// (agent.NewToolContext): the methods the guard reads, the rest from
// agent.StrictContextMock (which panics on anything else, so the fuzz
// target also checks that the guard reads nothing more).
type toolCtx struct {
	agent.StrictContextMock
	app, user, sess, id string
	actions             *session.EventActions
	confirmation        *toolconfirmation.ToolConfirmation
	asked               []string
}

func newToolCtx(app, user, sess, id string, conf *toolconfirmation.ToolConfirmation) *toolCtx {
	return &toolCtx{StrictContextMock: agent.NewStrictContextMock(context.Background()),
		app: app, user: user, sess: sess, id: id, actions: &session.EventActions{}, confirmation: conf}
}

func (c *toolCtx) AppName() string                                      { return c.app }
func (c *toolCtx) UserID() string                                       { return c.user }
func (c *toolCtx) SessionID() string                                    { return c.sess }
func (c *toolCtx) FunctionCallID() string                               { return c.id }
func (c *toolCtx) InvocationID() string                                 { return "inv-" + c.id }
func (c *toolCtx) Actions() *session.EventActions                       { return c.actions }
func (c *toolCtx) ToolConfirmation() *toolconfirmation.ToolConfirmation { return c.confirmation }
func (c *toolCtx) RequestConfirmation(hint string, payload any) error {
	if c.id == "" {
		return errors.New("no function call id")
	}
	c.asked = append(c.asked, hint)
	return nil
}

var _ agent.Context = (*toolCtx)(nil)

// namedTool is a tool.Tool with only a name.
type namedTool string

func (n namedTool) Name() string      { return string(n) }
func (namedTool) Description() string { return "a tool" }
func (namedTool) IsLongRunning() bool { return false }

var _ tool.Tool = namedTool("")

// FuzzGuard feeds the guard arbitrary tool names, call ids, session keys,
// arguments (also ones no JSON encoder takes), confirmations and results.
// The guard never panics and never returns an error to ADK: a call is
// either allowed — (nil, nil), and its result is then recorded and the
// call closed — or answered with a result holding one "error" string.
// The budget is never overspent and the log verifies.
func FuzzGuard(f *testing.F) {
	f.Add("read_file", "c1", "s", []byte(`{"path":"/a"}`), uint8(0), []byte(`{"ok":true}`), false, uint8(0))
	f.Add("delete_file", "d1", "s", []byte(`{"path":"/"}`), uint8(1), []byte(`{}`), false, uint8(0))
	f.Add("delete_file", "d1", "s", []byte(`{"path":"/"}`), uint8(2), []byte(`{}`), false, uint8(0))
	f.Add("delete_file", "", "s", []byte(`{"path":"/"}`), uint8(0), []byte(`{}`), false, uint8(0))
	f.Add("delete_file", "", "s", []byte(`{"path":"/"}`), uint8(1), []byte(`{}`), false, uint8(0))
	f.Add("send", "x", "a/b%", []byte(`null`), uint8(0), []byte(`not json`), true, uint8(1))
	f.Add("nope", "x", "", []byte(`{"n":1e400}`), uint8(3), []byte(`[]`), false, uint8(2))
	f.Add("read_*", "\xff", "\x00", []byte(`{"a":{"b":[1,2,{"c":null}]}}`), uint8(1), []byte(`{"r":"\u00e9"}`), true, uint8(3))

	f.Fuzz(func(t *testing.T, toolName, callID, sess string, args []byte, confirm uint8, result []byte, toolFails bool, odd uint8) {
		log := newLog(t)
		g := newGate(t, log, testConfig())
		guard, err := adk.New(g)
		require.NoError(t, err)

		var argMap map[string]any
		if json.Unmarshal(args, &argMap) != nil {
			argMap = map[string]any{"raw": string(args)}
		}
		switch odd % 4 {
		case 1:
			argMap = map[string]any{"nan": math.NaN()}
		case 2:
			argMap = map[string]any{"ch": make(chan int)}
		case 3:
			argMap = nil
		}
		var resMap map[string]any
		if json.Unmarshal(result, &resMap) != nil {
			resMap = map[string]any{"text": string(result)}
		}
		var toolErr error
		if toolFails {
			toolErr = errors.New("tool failed")
		}

		ctx := newToolCtx(appName, userID, sess, callID, nil)
		tl := namedTool(toolName)
		step := func(ctx *toolCtx) map[string]any {
			out, err := guard.BeforeTool(ctx, tl, argMap)
			require.NoError(t, err, "the guard answers ADK with results, never errors")
			if out != nil {
				e, ok := out["error"].(string)
				require.True(t, ok, "a refusal is an error string: %v", out)
				require.NotEmpty(t, e)
				require.Len(t, out, 1)
				// ADK runs the after callbacks for a skipped tool too.
				res, err := guard.AfterTool(ctx, tl, argMap, out, nil)
				require.NoError(t, err)
				require.Nil(t, res)
				return out
			}
			res, err := guard.AfterTool(ctx, tl, argMap, resMap, toolErr)
			require.NoError(t, err)
			require.Nil(t, res, "the guard passes the tool's result on")
			_, err = g.After(context.Background(), toolgate.Call{Caller: adk.SessionCaller(appName, userID, sess), ID: callID}, toolgate.Result{})
			require.ErrorIs(t, err, toolgate.ErrUnknownCall, "the call was closed")
			return nil
		}
		step(ctx)
		if confirm%3 != 0 && len(ctx.asked) == 0 && toolName == "delete_file" {
			// A confirmation the guard never asked for (the model wrote
			// the adk_request_confirmation call) approves nothing.
			out := step(newToolCtx(appName, userID, sess, callID, &toolconfirmation.ToolConfirmation{Confirmed: true}))
			require.NotNil(t, out, "an unasked confirmation ran a DELETE")
		}
		if confirm%3 != 0 && len(ctx.asked) > 0 {
			// ADK's resume: the same call id, a new invocation, the
			// human's answer.
			step(newToolCtx(appName, userID, sess, callID, &toolconfirmation.ToolConfirmation{Confirmed: confirm%3 == 1}))
		}

		if m, ok := g.Meter(adk.SessionCaller(appName, userID, sess)); ok {
			require.LessOrEqual(t, m.Budget().Net(), m.Budget().Limit())
		}
		_, err = trace.Verify(entries(t, log))
		require.NoError(t, err)
	})
}
