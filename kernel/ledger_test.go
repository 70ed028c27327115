package kernel

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
)

// ledgerModel is what a Budget version must report: per id, charged,
// refunded and rolled back.
type ledgerModel map[string]ledgerEntry

func (m ledgerModel) with(id string, e ledgerEntry) ledgerModel {
	n := make(ledgerModel, len(m)+1)
	for k, v := range m {
		n[k] = v
	}
	n[id] = e
	return n
}

func checkLedger(t *testing.T, b Budget, m ledgerModel, ids []string) {
	t.Helper()
	if b.executions() != len(m) {
		t.Fatalf("executions %d, model %d", b.executions(), len(m))
	}
	for _, id := range ids {
		c, r, ok := b.Charged(id)
		e, want := m[id]
		if ok != want || c != e.charged || r != e.refunded || b.RolledBack(id) != e.rolledBack {
			t.Fatalf("%s: got (%d, %d, %v, %v), model %+v present %v", id, c, r, ok, b.RolledBack(id), e, want)
		}
	}
}

// TestLedgerVersionsAgainstModel: charges, refunds and rollbacks applied
// to random earlier versions (so versions branch, and tails are shared,
// copied and merged into the trie) never change what any version reports.
func TestLedgerVersionsAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type version struct {
		b Budget
		m ledgerModel
	}
	vs := []version{{Budget{limit: 1 << 40}, ledgerModel{}}}
	var ids []string
	for step := range 3000 {
		from := vs[len(vs)-1]
		if rng.IntN(4) == 0 {
			from = vs[rng.IntN(len(vs))]
		}
		var nb Budget
		var nm ledgerModel
		switch op := rng.IntN(6); {
		case op < 4 || len(ids) == 0:
			id := "e" + strconv.Itoa(step)
			if len(ids) > 0 && rng.IntN(10) == 0 {
				id = ids[rng.IntN(len(ids))] // maybe a duplicate
			}
			c := Cost(rng.IntN(100))
			b, err := from.b.charge(id, c)
			if _, dup := from.m[id]; dup {
				if err == nil {
					t.Fatalf("duplicate charge of %s accepted", id)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			nb, nm = b, from.m.with(id, ledgerEntry{charged: c})
		case op == 4:
			id := ids[rng.IntN(len(ids))]
			e, ok := from.m[id]
			b, err := from.b.refund(id, 1)
			if !ok || e.charged-e.refunded < 1 {
				if err == nil {
					t.Fatalf("refund of %s accepted", id)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			e.refunded++
			nb, nm = b, from.m.with(id, e)
		default:
			id := ids[rng.IntN(len(ids))]
			e, ok := from.m[id]
			b, amount, err := from.b.rollback(id)
			if !ok || e.rolledBack {
				if err == nil {
					t.Fatalf("rollback of %s accepted", id)
				}
				continue
			}
			if err != nil || amount != e.charged-e.refunded {
				t.Fatalf("rollback of %s: %v, amount %d", id, err, amount)
			}
			nb, nm = b, from.m.with(id, ledgerEntry{charged: e.charged, refunded: e.charged, rolledBack: true})
		}
		vs = append(vs, version{nb, nm})
		if step%97 == 0 {
			for _, v := range vs[max(0, len(vs)-50):] {
				checkLedger(t, v.b, v.m, ids)
			}
		}
	}
	for _, v := range vs {
		checkLedger(t, v.b, v.m, ids)
	}
}

// TestLedgerConcurrentCharges: charges from the same versions in several
// goroutines (run with -race) each get their own consistent version.
func TestLedgerConcurrentCharges(t *testing.T) {
	base := Budget{limit: 1 << 40}
	for i := range 40 { // a partly filled tail, and a full one below
		base, _ = base.charge("base"+strconv.Itoa(i), 1)
	}
	var wg sync.WaitGroup
	results := make([]Budget, 8)
	for g := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := base
			for i := range 100 {
				var err error
				if b, err = b.charge("g"+strconv.Itoa(g)+"/"+strconv.Itoa(i), 1); err != nil {
					t.Error(err)
					return
				}
				if _, _, ok := base.Charged("g" + strconv.Itoa(g) + "/0"); ok {
					t.Error("the base version sees a later charge")
					return
				}
			}
			results[g] = b
		}()
	}
	wg.Wait()
	for g, b := range results {
		if b.executions() != 140 || b.Gross() != 140 {
			t.Fatalf("goroutine %d: %d executions, gross %d", g, b.executions(), b.Gross())
		}
		for h := range results {
			_, _, ok := b.Charged("g" + strconv.Itoa(h) + "/99")
			if ok != (g == h) {
				t.Fatalf("goroutine %d's version: charge of %d present %v", g, h, ok)
			}
		}
	}
}
