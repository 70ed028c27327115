// Command kerneldemo walks through the safety kernel: an agent with a
// budget of 5 units tries to send e-mails, hits an invariant (and is told
// why in words it can act on), runs out of budget, escapes with its
// emergency action, rolls an action back, makes a tool call whose price is
// known only afterwards (reserve, then settle), and the whole run is
// verified and replayed from its trace.
//
//	go run ./examples/kerneldemo                  # the log in memory
//	go run ./examples/kerneldemo -log agent.trace # the log kept in a new file
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
)

func main() {
	keep := flag.String("log", "", "keep the log in this new `file` (default: in memory)")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "kerneldemo:", err)
		os.Exit(1)
	}
}

// openLog returns a log in memory, or in keep, a new file.
func openLog(keep string) (*trace.Log, error) {
	if keep == "" {
		return trace.NewMemoryLog(), nil
	}
	if _, err := os.Lstat(keep); !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("-log %s: the demonstration writes a new log; give a path where no file is", keep)
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

func run(ctx context.Context, w io.Writer, keep string) error {
	k, err := kernel.New(kernel.Config{
		Budget:        5 * kernel.Unit,
		MinActionCost: kernel.Unit / 2,
		Invariants: []kernel.Invariant{{
			Name:        "at most 3 e-mails",
			Description: "the agent may not send more than three e-mails",
			Suggestion:  "summarise instead of sending another e-mail",
			Check: func(s kernel.State) bool {
				n, _ := s.Int("sent")
				return n <= 3
			},
		}},
		EmergencyActions: []string{"safe_hover"},
	})
	if err != nil {
		return err
	}
	initial, err := kernel.NewState(map[string]any{"sent": 0, "outbox": []any{}})
	if err != nil {
		return err
	}
	log, err := openLog(keep)
	if err != nil {
		return err
	}
	defer log.Close()
	sess, err := kernel.NewSession(ctx, log, k, initial)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "budget %s units, minimum cost %s, at most %d steps\n", sess.Meter().Budget().Limit(), k.MinActionCost(), k.MaxSteps())

	cost, err := kernel.ParseCost("1.25")
	if err != nil {
		return err
	}
	send := func(to string) kernel.Action {
		return kernel.Action{
			ID: "send_email", Name: "send e-mail", Description: "send an e-mail to " + to, Cost: cost,
			Category: "io", Reversible: true,
			Effects: []kernel.Effect{kernel.Increment("sent", value.Int(1)), kernel.Append("outbox", value.String(to))},
		}
	}
	var last kernel.Record
	for _, to := range []string{"ana", "bo", "cy", "di"} {
		rec, err := sess.Execute(ctx, send(to))
		var rej *kernel.RejectedError
		switch {
		case errors.As(err, &rej):
			fmt.Fprintf(w, "to %s: %s\n", to, rej.Verdict.Explain())
		case err != nil:
			return err
		default:
			last = rec
			fmt.Fprintf(w, "to %s: sent, spent %s\n", to, sess.Meter().Budget().Net())
		}
	}
	if _, err := sess.Execute(ctx, kernel.Action{ID: "think", Cost: 3 * kernel.Unit / 2}); errors.Is(err, kernel.CheckBudget) {
		fmt.Fprintln(w, "think: rejected, budget exceeded")
	}
	if _, err := sess.Execute(ctx, kernel.Action{ID: "safe_hover", Name: "hover"}); err != nil {
		return err
	}
	fmt.Fprintln(w, "safe_hover: executed (emergency action, budget left", sess.Meter().Budget().Remaining().String()+")")

	// safe_hover changed nothing, so the last e-mail can still be undone.
	rr, err := sess.Rollback(ctx, last.ExecID)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "rollback of the last e-mail: refund %s, state %s, spent %s, steps still %d\n",
		rr.Refund, sess.State(), sess.Meter().Budget().Net(), sess.Meter().Steps())
	if _, err := sess.Rollback(ctx, last.ExecID); errors.Is(err, kernel.ErrFingerprintMismatch) {
		fmt.Fprintln(w, "second rollback: refused, the state is no longer the one that e-mail produced")
	}

	// A tool call priced afterwards: reserve an upper bound, record the
	// call's arguments, count the call per tool, settle at the real price.
	search := kernel.Action{ID: "search", Cost: kernel.Unit, Input: []byte(`{"q":"weather in Lyon"}`),
		Effects: []kernel.Effect{kernel.Count("calls/search", value.Int(1), value.Int(0))}}
	res, err := sess.Reserve(ctx, search)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "search: reserved %s, receipt entry %d, %d call open\n", res.Action.Cost, res.Seq, len(sess.Meter().Reservations()))
	set, err := sess.Settle(ctx, res.ExecID, kernel.Unit/4)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "search: settled at %s, refund %s, spent %s\n", set.Actual, set.Refund, sess.Meter().Budget().Net())

	head, err := log.Verify(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "trace: %d entries, verified\n", head.Size)
	replayed, err := kernel.Replay(ctx, log, k, sess.ID())
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "replayed state %s equal: %v\n", replayed.State(), replayed.State().Equal(sess.State()))
	if keep != "" {
		if err := log.Close(); err != nil {
			return err
		}
		fmt.Fprintf(w, "log kept in %s\n", keep)
	}
	return nil
}
