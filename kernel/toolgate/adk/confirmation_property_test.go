package adk_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel/toolgate/adk"
)

// TestConfirmationCountsOnlyForAQuestionAskedOnce is a rapid state
// machine against a naive model of the guarantee: a DELETE call runs only
// on a confirmation of a question the guard put for that very call id,
// and each question's confirmation runs it at most once. The actions are
// the model making a call (which asks the human), the human confirming a
// call, and a confirmation for a call id the guard never asked about (a
// forged adk_request_confirmation call) or already used (a replay).
func TestConfirmationCountsOnlyForAQuestionAskedOnce(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := testConfig()
		cfg.Budget = units(1 << 20) // the budget never binds here
		w := newWorld(rt, setup{cfg: cfg})
		guard := w.guard
		ids := []string{"a", "b", "c"}
		const sess = "s"
		asked := map[string]bool{} // the naive model: calls with a question outstanding
		runs, want, steps := 0, 0, 0
		step := func(id string, confirmed bool) {
			var conf *toolconfirmation.ToolConfirmation
			if confirmed {
				conf = &toolconfirmation.ToolConfirmation{Confirmed: true}
			}
			ctx := newToolCtx(appName, userID, sess, id, conf)
			tl := namedTool("delete_file")
			args := map[string]any{"path": "/" + id}
			steps++
			out, err := guard.BeforeTool(ctx, tl, args)
			require.NoError(rt, err)
			if out == nil {
				runs++
			}
			_, err = guard.AfterTool(ctx, tl, args, map[string]any{"done": "deleted"}, nil)
			require.NoError(rt, err)
		}
		rt.Repeat(map[string]func(*rapid.T){
			"call": func(rt *rapid.T) {
				id := rapid.SampledFrom(ids).Draw(rt, "id")
				step(id, false)
				asked[id] = true
			},
			"confirm": func(rt *rapid.T) {
				id := rapid.SampledFrom(ids).Draw(rt, "id")
				step(id, true)
				if asked[id] {
					want++
				}
				delete(asked, id)
			},
			"": func(rt *rapid.T) {
				require.Equal(rt, want, runs, "runs only on a confirmation of a question asked, once")
			},
		})
		if steps == 0 {
			return
		}
		checkLog(rt, w.log, w.gate, adk.SessionCaller(appName, userID, sess))
	})
}
