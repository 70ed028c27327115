package sqlbackend_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/verity-go/verity/speculative"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// pair drives two Stewards with the same calls and ids: one over the SQL
// backend, one over the Memory backend, the naive model.
type pair struct {
	sql, mem     speculative.Backend
	stSQL, stMem *speculative.Steward
	prefix       string // keeps the checks sharing one database apart
	intents      []string
}

// fastDB opens a new database that does not wait for the disk on commit:
// the model checks compare answers, not durability.
func fastDB(t testing.TB, b sqltest.Backend) *sql.DB {
	dsn := b.NewDSN(t)
	if b.Dialect == sqlstore.SQLite {
		return b.Open(t, dsn+"&_pragma=synchronous(OFF)")
	}
	dsn, err := sqltest.WithParam(dsn, "synchronous_commit", "off")
	if err != nil {
		t.Fatal(err)
	}
	return b.Open(t, dsn)
}

func ids(prefix string) func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("%sid-%d", prefix, n) }
}

// sameError fails unless both errors are nil or both match the same
// sentinels of the package.
func sameError(t *rapid.T, what string, a, b error) {
	for _, s := range []error{speculative.ErrSpeculative, speculative.ErrMalformed, speculative.ErrMissingClaimID,
		speculative.ErrSession, speculative.ErrNoProposition, speculative.ErrPromotion, speculative.ErrIntent} {
		if errors.Is(a, s) != errors.Is(b, s) {
			t.Fatalf("%s: SQL %v, memory %v", what, a, b)
		}
	}
	if (a == nil) != (b == nil) {
		t.Fatalf("%s: SQL %v, memory %v", what, a, b)
	}
}

func (p *pair) check(t *rapid.T) {
	ctx := context.Background()
	for _, c := range []string{"c1", "c2", ""} {
		c = p.prefix + c
		a, errA := p.sql.Evidence(ctx, c)
		b, errB := p.mem.Evidence(ctx, c)
		sameError(t, "Evidence", errA, errB)
		if !slices.EqualFunc(a, b, func(x, y []byte) bool { return string(x) == string(y) }) {
			t.Fatalf("Evidence(%s): SQL %q, memory %q", c, a, b)
		}
		sa, errA := p.sql.Status(ctx, c)
		sb, errB := p.mem.Status(ctx, c)
		sameError(t, "Status", errA, errB)
		if sa.Status != sb.Status || !slices.Equal(sa.Evidence, sb.Evidence) {
			t.Fatalf("Status(%s): SQL %+v, memory %+v", c, sa, sb)
		}
	}
	for _, s := range []string{"s1", "s2"} {
		s = p.prefix + s
		a, errA := p.sql.Hypotheses(ctx, s)
		b, errB := p.mem.Hypotheses(ctx, s)
		sameError(t, "Hypotheses", errA, errB)
		if fmt.Sprintf("%+v", a) != fmt.Sprintf("%+v", b) && len(a)+len(b) > 0 {
			t.Fatalf("Hypotheses(%s): SQL %+v, memory %+v", s, a, b)
		}
	}
	for _, in := range p.intents[max(0, len(p.intents)-3):] {
		for k := speculative.WriteKindEvidence; k <= speculative.WriteKindProposition; k++ {
			a, errA := p.sql.Applied(ctx, k, in)
			b, errB := p.mem.Applied(ctx, k, in)
			sameError(t, "Applied", errA, errB)
			if a != b {
				t.Fatalf("Applied(%v, %s): SQL %v, memory %v", k, in, a, b)
			}
		}
	}
}

// TestBackendMatchesMemory: random Steward calls through the SQL backend
// and through the Memory backend give the same answers, errors and
// stored state.
func TestBackendMatchesMemory(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		backend := open(t, b, fastDB(t, b))
		run := 0
		rapid.Check(t, func(t *rapid.T) {
			run++
			p := &pair{sql: backend, mem: speculative.NewMemory(), prefix: fmt.Sprintf("r%d-", run)}
			var err error
			p.stSQL, err = speculative.NewSteward(ctx, trace.NewMemoryLog(), p.sql, speculative.WithIDs(ids(p.prefix)))
			if err != nil {
				t.Fatal(err)
			}
			p.stMem, err = speculative.NewSteward(ctx, trace.NewMemoryLog(), p.mem, speculative.WithIDs(ids(p.prefix)))
			if err != nil {
				t.Fatal(err)
			}
			claim := rapid.Custom(func(t *rapid.T) string {
				return p.prefix + rapid.SampledFrom([]string{"c1", "c2", ""}).Draw(t, "claim")
			})
			t.Repeat(map[string]func(*rapid.T){
				"evidence": func(t *rapid.T) {
					doc := map[string]any{"claim_id": claim.Draw(t, "claim"), "success": rapid.Bool().Draw(t, "ok"),
						"variance": rapid.SampledFrom([]float64{0.01, 0.5}).Draw(t, "variance"), "run": rapid.IntRange(0, 3).Draw(t, "run")}
					if rapid.IntRange(0, 9).Draw(t, "speculative") == 0 {
						doc["lane"] = "speculative"
					}
					a, errA := p.stSQL.PersistEvidence(ctx, doc)
					b, errB := p.stMem.PersistEvidence(ctx, doc)
					sameError(t, "PersistEvidence", errA, errB)
					if a != b {
						t.Fatalf("PersistEvidence: SQL %+v, memory %+v", a, b)
					}
					p.intents = append(p.intents, a.Intent)
				},
				"proposition": func(t *rapid.T) {
					c := claim.Draw(t, "claim")
					sameError(t, "RegisterProposition", p.stSQL.RegisterProposition(ctx, c, map[string]any{"text": "p"}),
						p.stMem.RegisterProposition(ctx, c, map[string]any{"text": "p"}))
				},
				"hypothesis": func(t *rapid.T) {
					s := p.prefix + rapid.SampledFrom([]string{"s1", "s2"}).Draw(t, "session")
					h := speculative.Hypothesis{ClaimID: claim.Draw(t, "link"), Content: map[string]any{"idea": rapid.IntRange(0, 3).Draw(t, "idea")}}
					a, errA := p.stSQL.PersistHypothesis(ctx, s, h)
					b, errB := p.stMem.PersistHypothesis(ctx, s, h)
					sameError(t, "PersistHypothesis", errA, errB)
					if fmt.Sprintf("%+v", a) != fmt.Sprintf("%+v", b) {
						t.Fatalf("PersistHypothesis: SQL %+v, memory %+v", a, b)
					}
					p.intents = append(p.intents, a.Intent)
				},
				"status": func(t *rapid.T) {
					c := claim.Draw(t, "claim")
					to := rapid.SampledFrom([]speculative.Status{speculative.StatusRefuted, speculative.StatusSupported, speculative.StatusProven}).Draw(t, "to")
					checks := speculative.NonFragility{FeynmanPassed: true}
					a, errA := p.stSQL.ProposeStatus(ctx, c, to, checks)
					b, errB := p.stMem.ProposeStatus(ctx, c, to, checks)
					sameError(t, "ProposeStatus", errA, errB)
					if errA != nil {
						return
					}
					p.intents = append(p.intents, a)
					if rapid.Bool().Draw(t, "approve") {
						ap := speculative.Approval{By: "alice", Human: rapid.Bool().Draw(t, "human")}
						sameError(t, "Approve", p.stSQL.Approve(ctx, a, ap), p.stMem.Approve(ctx, b, ap))
					}
					ta, errA := p.stSQL.Execute(ctx, a)
					tb, errB := p.stMem.Execute(ctx, b)
					sameError(t, "Execute", errA, errB)
					if fmt.Sprintf("%+v", ta) != fmt.Sprintf("%+v", tb) {
						t.Fatalf("Execute: SQL %+v, memory %+v", ta, tb)
					}
				},
				"": p.check,
			})
		})
	})
}
