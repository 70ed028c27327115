package kernel_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
)

// An agent's actions go through a Session: each is checked against the
// budget, the step bound and the invariants, committed atomically and
// recorded, or refused with every reason; a committed one can be undone
// exactly, and the log rebuilds the session.
func Example() {
	ctx := context.Background()
	k, _ := kernel.New(kernel.Config{
		Budget:        5 * kernel.Unit, // B0
		MinActionCost: kernel.Unit / 2, // ε: at most 10 steps
		Invariants: []kernel.Invariant{{Name: "at most 2 e-mails", Check: func(s kernel.State) bool {
			n, _ := s.Int("sent")
			return n <= 2
		}}},
	})
	log := trace.NewMemoryLog()
	initial, _ := kernel.NewState(map[string]any{"sent": 0})
	sess, _ := kernel.NewSession(ctx, log, k, initial)

	send := kernel.Action{ID: "send", Cost: kernel.Unit, Effects: []kernel.Effect{kernel.Increment("sent", value.Int(1))}}
	rec, _ := sess.Execute(ctx, send)
	sess.Execute(ctx, send)
	_, err := sess.Execute(ctx, send) // a *RejectedError says why
	fmt.Println(errors.Is(err, kernel.CheckInvariant), sess.State(), sess.Meter())

	_, err = sess.Rollback(ctx, rec.ExecID) // only the latest execution can be undone
	fmt.Println(errors.Is(err, kernel.ErrFingerprintMismatch))

	again, _ := kernel.Replay(ctx, log, k, sess.ID())
	fmt.Println(again.State().Equal(sess.State()))
	// Output:
	// true {"sent":2} spent 2 of 5 (gross 2, refunded 0), 2 steps, 0 emergency steps
	// true
	// true
}

// A kernel with a budget, a minimum action cost and a blocking invariant
// decides about an action without changing anything.
func ExampleKernel_Evaluate() {
	k, _ := kernel.New(kernel.Config{
		Budget:        10 * kernel.Unit,
		MinActionCost: kernel.Unit,
		Invariants: []kernel.Invariant{{
			Name: "balance >= 0",
			Check: func(s kernel.State) bool {
				b, _ := s.Int("balance")
				return b >= 0
			},
		}},
	})
	s, _ := kernel.NewState(map[string]any{"balance": 5})
	withdraw := kernel.Action{ID: "withdraw", Cost: kernel.Unit,
		Effects: []kernel.Effect{kernel.Decrement("balance", value.Int(8))}}

	v := k.Evaluate(k.Start(), s, withdraw)
	fmt.Println("allowed:", v.Allowed())
	for _, c := range v.Checks() {
		fmt.Println(string(c.Check), c.Name, c.Status)
	}
	// Output:
	// allowed: false
	// well_formed  passed
	// min_cost  passed
	// budget  passed
	// step_limit  passed
	// effects  passed
	// invariant balance >= 0 failed
}

// Execute commits an allowed action and returns new values; Rollback
// undoes it exactly and refunds its cost, but never the step.
func ExampleKernel_Rollback() {
	k, _ := kernel.New(kernel.Config{Budget: 10 * kernel.Unit, MinActionCost: kernel.Unit})
	s0, _ := kernel.NewState(map[string]any{"count": 1, "seen": []any{"a", "a"}})
	a := kernel.Action{ID: "visit", Cost: 1500, Effects: []kernel.Effect{
		kernel.Increment("count", value.Int(1)),
		kernel.Remove("seen", value.String("a")),
		kernel.Set("note", value.Null()),
	}}
	s1, ks1, rec, err := k.Execute(k.Start(), s0, a, "exec-1")
	if err != nil {
		panic(err)
	}
	fmt.Println(s1, "spent", ks1.Budget().Net())
	s2, ks2, rr, _ := k.Rollback(ks1, s1, rec)
	fmt.Println(s2, "refund", rr.Refund, "spent", ks2.Budget().Net(), "steps", ks2.Steps())
	fmt.Println("exact:", s2.Equal(s0))
	// Output:
	// {"count":2,"note":null,"seen":["a"]} spent 1.5
	// {"count":1,"seen":["a","a"]} refund 1.5 spent 0 steps 1
	// exact: true
}

// ParseCost never rounds: a cost below the ×1000 unit is an error.
func ExampleParseCost() {
	for _, s := range []string{"1.5", "0.001", "0.0005", "-2"} {
		c, err := kernel.ParseCost(s)
		fmt.Println(s, int64(c), err != nil)
	}
	// Output:
	// 1.5 1500 false
	// 0.001 1 false
	// 0.0005 0 true
	// -2 0 true
}

// A Session serialises actions, records each one in a trace log, and can
// be rebuilt from that log.
func ExampleSession() {
	ctx := context.Background()
	k, _ := kernel.New(kernel.Config{Budget: 3 * kernel.Unit, MinActionCost: kernel.Unit, EmergencyActions: []string{"halt"}})
	log := trace.NewMemoryLog()
	s0, _ := kernel.NewState(map[string]any{"sent": 0})
	sess, _ := kernel.NewSession(ctx, log, k, s0)

	send := kernel.Action{ID: "send", Cost: kernel.Unit, Effects: []kernel.Effect{kernel.Increment("sent", value.Int(1))}}
	for range 4 {
		if _, err := sess.Execute(ctx, send); errors.Is(err, kernel.CheckBudget) {
			fmt.Println("rejected: budget exceeded")
		}
	}
	// T8: the registered emergency action still runs.
	if _, err := sess.Execute(ctx, kernel.Action{ID: "halt"}); err == nil {
		fmt.Println("halt executed")
	}
	head, _ := log.Verify(ctx)
	fmt.Println("entries:", head.Size, "state:", sess.State())

	replayed, _ := kernel.Replay(ctx, log, k, sess.ID())
	fmt.Println("replayed equal:", replayed.State().Equal(sess.State()))
	// Output:
	// rejected: budget exceeded
	// halt executed
	// entries: 6 state: {"sent":3}
	// replayed equal: true
}

// Values are strictly typed: the typed JSON keeps an integral float a
// float and a large integer exact.
func ExampleValue_MarshalJSON() {
	s, _ := kernel.NewState(map[string]any{"i": 1, "f": 1.0, "s": "1", "big": int64(1) << 60, "n": nil})
	fmt.Println(s)
	back, _ := kernel.DecodeState([]byte(s.String()))
	fmt.Println(back.Equal(s))
	// Output:
	// {"big":{"$int":"1152921504606846976"},"f":{"$float":"1"},"i":1,"n":null,"s":"1"}
	// true
}
