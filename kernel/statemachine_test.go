package kernel_test

import (
	"maps"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/kerneltest"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
)

// naive is a deliberately simple model of a session: a Go map copied on
// every change, integer counters, and a stack of prior maps for rollback.
type naive struct {
	vars         map[string]value.Value
	limit, gross kernel.Cost
	refunded     kernel.Cost
	steps, emerg uint64
	maxSteps     uint64
	eps          kernel.Cost
	undo         []undoEntry // executions, latest last
	rolledBack   map[string]bool
}

type undoEntry struct {
	id    string
	prior map[string]value.Value
	after map[string]value.Value
	cost  kernel.Cost
}

// apply is the model's own implementation of the effect rules.
func (m *naive) apply(effects []kernel.Effect) (map[string]value.Value, bool) {
	vars := maps.Clone(m.vars)
	for _, e := range effects {
		old, had := vars[e.Key]
		op := e.Op
		if op == kernel.OpCount {
			// count is increment from Initial when the variable is absent
			op = kernel.OpIncrement
			if !had {
				old, had = e.Initial, true
			}
		}
		switch op {
		case kernel.OpSet:
			vars[e.Key] = e.Value
		case kernel.OpDelete:
			delete(vars, e.Key)
		case kernel.OpIncrement, kernel.OpDecrement, kernel.OpMultiply:
			if !had {
				return nil, false
			}
			if oi, ok := old.AsInt(); ok {
				ei, ok := e.Value.AsInt()
				if !ok {
					return nil, false
				}
				var r float64
				var ri int64
				switch op {
				case kernel.OpIncrement:
					ri, r = oi+ei, float64(oi)+float64(ei)
				case kernel.OpDecrement:
					ri, r = oi-ei, float64(oi)-float64(ei)
				default:
					ri, r = oi*ei, float64(oi)*float64(ei)
				}
				// Overflow iff the exact result leaves int64; compare in
				// big-ish floats with a margin, then confirm exactly.
				if r > 9.3e18 || r < -9.3e18 || !exactInt(oi, ei, op, ri) {
					return nil, false
				}
				vars[e.Key] = value.Int(ri)
				continue
			}
			of, ok := old.AsFloat()
			if !ok {
				return nil, false
			}
			var ef float64
			if f, ok := e.Value.AsFloat(); ok {
				ef = f
			} else {
				i, _ := e.Value.AsInt()
				if i > 1<<53 || i < -(1<<53) {
					return nil, false
				}
				ef = float64(i)
			}
			var r float64
			switch op {
			case kernel.OpIncrement:
				r = of + ef
			case kernel.OpDecrement:
				r = of - ef
			default:
				r = of * ef
			}
			if math.IsInf(r, 0) || math.IsNaN(r) {
				return nil, false
			}
			vars[e.Key] = value.Float(r)
		case kernel.OpAppend, kernel.OpRemove:
			if !had || old.Kind() != value.KindList {
				return nil, false
			}
			items := old.Items()
			if e.Op == kernel.OpAppend {
				items = append(items, e.Value)
			} else {
				i := slices.IndexFunc(items, e.Value.Equal)
				if i < 0 {
					return nil, false
				}
				items = slices.Delete(items, i, i+1)
			}
			vars[e.Key] = value.List(items...)
		}
	}
	return vars, true
}

// exactInt re-derives the integer result by division, to confirm it did
// not wrap.
func exactInt(a, b int64, op kernel.Op, r int64) bool {
	switch op {
	case kernel.OpIncrement:
		return (b >= 0) == (r >= a)
	case kernel.OpDecrement:
		return (b >= 0) == (r <= a)
	default:
		if a == 0 || b == 0 {
			return r == 0
		}
		return r/b == a && !(a == -1 && b == math.MinInt64) && !(b == -1 && a == math.MinInt64)
	}
}

func sameVars(s kernel.State, vars map[string]value.Value) bool {
	if s.Len() != len(vars) {
		return false
	}
	for k, v := range vars {
		got, ok := s.Get(k)
		if !ok || !got.Equal(v) {
			return false
		}
	}
	return true
}

// TestSessionStateMachine checks Session against the naive model with a
// rapid state machine: random executions (valid, invalid, emergency),
// rollbacks of any earlier execution (only the latest applicable one may
// succeed), and a full replay at the end.
func TestSessionStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		keys := []string{"x", "y", "l"}
		eps := kernel.Cost(rapid.Int64Range(1, 1500).Draw(t, "eps"))
		limit := kernel.Cost(rapid.Int64Range(0, 12_000).Draw(t, "limit"))
		k := mustKernel(t, kernel.Config{Budget: limit, MinActionCost: eps, Invariants: []kernel.Invariant{nonNegative("x")}, EmergencyActions: []string{"hover"}})
		initial := mustState(t, map[string]any{"x": 3, "y": 1.5, "l": []any{1, 1}})
		log := trace.NewMemoryLog()
		sess, err := kernel.NewSession(ctx, log, k, initial)
		if err != nil {
			t.Fatal(err)
		}
		m := &naive{vars: map[string]value.Value{"x": value.Int(3), "y": value.Float(1.5), "l": value.List(value.Int(1), value.Int(1))},
			limit: limit, maxSteps: uint64(limit / eps), eps: eps, rolledBack: map[string]bool{}}
		actions := rapid.OneOf(kerneltest.Action([]string{"a", "hover"}, keys, 2*kernel.Unit), rapid.Just(kernel.Action{ID: "hover"}))

		t.Repeat(map[string]func(*rapid.T){
			"execute": func(t *rapid.T) {
				a := actions.Draw(t, "action")
				emergency := a.ID == "hover"
				next, fits := m.apply(a.Effects)
				nonNeg := true
				if fits {
					if x, ok := next["x"]; ok {
						if i, isInt := x.AsInt(); isInt && i < 0 {
							nonNeg = false
						}
					}
				}
				allowed := fits && nonNeg && a.Cost <= m.limit-(m.gross-m.refunded) &&
					(emergency || (a.Cost >= m.eps && m.steps < m.maxSteps))
				rec, err := sess.Execute(ctx, a)
				if (err == nil) != allowed {
					t.Fatalf("model allowed=%v, session err=%v", allowed, err)
				}
				if !allowed {
					return
				}
				m.undo = append(m.undo, undoEntry{id: rec.ExecID, prior: m.vars, after: next, cost: a.Cost})
				m.vars = next
				m.gross += a.Cost
				if emergency {
					m.emerg++
				} else {
					m.steps++
				}
			},
			"rollback": func(t *rapid.T) {
				if len(m.undo) == 0 {
					t.Skip("nothing to roll back")
				}
				i := rapid.IntRange(0, len(m.undo)-1).Draw(t, "which")
				u := m.undo[i]
				_, err := sess.Rollback(ctx, u.id)
				applicable := !m.rolledBack[u.id] && kernelEqual(u.after, m.vars)
				if (err == nil) != applicable {
					t.Fatalf("rollback %s: model applicable=%v, err=%v", u.id, applicable, err)
				}
				if err == nil {
					m.vars = u.prior
					m.refunded += u.cost
					m.rolledBack[u.id] = true
				}
			},
			"": func(t *rapid.T) {
				ks := sess.Meter()
				b := ks.Budget()
				if !sameVars(sess.State(), m.vars) {
					t.Fatalf("state %s differs from the model", sess.State())
				}
				if b.Gross() != m.gross || b.Refunded() != m.refunded || ks.Steps() != m.steps || ks.EmergencySteps() != m.emerg {
					t.Fatalf("counters: gross %s/%s refunded %s/%s steps %d/%d emergency %d/%d",
						b.Gross(), m.gross, b.Refunded(), m.refunded, ks.Steps(), m.steps, ks.EmergencySteps(), m.emerg)
				}
			},
		})
		re, err := kernel.Replay(ctx, log, k, sess.ID())
		if err != nil {
			t.Fatal(err)
		}
		if !re.State().Equal(sess.State()) || re.Meter().Budget().Net() != sess.Meter().Budget().Net() || re.Meter().Steps() != sess.Meter().Steps() {
			t.Fatal("replay differs from the live session")
		}
	})
}

func kernelEqual(a, b map[string]value.Value) bool {
	return maps.EqualFunc(a, b, value.Value.Equal)
}
