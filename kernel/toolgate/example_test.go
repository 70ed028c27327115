package toolgate_test

import (
	"context"
	"fmt"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// A gate with a budget of 3 units: reads are cheap, a deletion needs a
// human, and the budget runs out with an explanation the model can read.
func Example() {
	ctx := context.Background()
	log, _ := trace.NewLog(trace.NewMemory())
	g, err := toolgate.New(ctx, log, mustCompile(toolgate.Policy{
		Budget:  3 * kernel.Unit,
		MinCost: kernel.Unit / 100,
		Tools: []toolgate.Rule{
			{Match: "read_*", Cost: kernel.Unit / 10},
			{Match: "send_email", Cost: kernel.Unit},
			{Match: "delete_*", Cost: kernel.Unit, Tier: claims.TierDelete},
		},
	}))
	if err != nil {
		panic(err)
	}
	run := func(tool, args string) {
		d, err := g.Before(ctx, toolgate.Call{Tool: tool, Arguments: []byte(args), Caller: "agent-1"})
		if err != nil {
			panic(err)
		}
		if d.Verdict == toolgate.AskApproval {
			fmt.Println("ask:", d.Approval.Question)
			if _, err := g.Approve(ctx, d.Approval.ID, toolgate.DefaultApprover, "checked"); err != nil {
				panic(err)
			}
			d, _ = g.Before(ctx, d.Call)
		}
		switch d.Verdict {
		case toolgate.Allow:
			out, _ := g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"done"`)})
			fmt.Printf("%s: ran, charged %s\n", tool, out.Charged)
		case toolgate.Refuse:
			fmt.Printf("%s: refused: %s\n", tool, d.Explanation)
		}
	}
	run("read_file", `{"path":"notes.txt"}`)
	run("delete_file", `{"path":"old.txt"}`)
	run("send_email", `{"to":"a@example.com"}`)
	run("send_email", `{"to":"b@example.com"}`)
	run("format_disk", `{}`)
	// Output:
	// read_file: ran, charged 0.1
	// ask: Allow the DELETE tool call "delete_file" with arguments {"path":"old.txt"}?
	// delete_file: ran, charged 1
	// send_email: ran, charged 1
	// send_email: refused: tool "send_email" (rule #1, kernel): action "send_email" rejected: budget: cost 1, remaining 0.9
	// format_disk: refused: tool "format_disk" is not in the gate's catalogue
}
