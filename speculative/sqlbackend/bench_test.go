package sqlbackend_test

import (
	"context"
	"testing"

	"github.com/verity-go/verity/speculative"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// BenchmarkWrite measures Backend writes made by a Steward (whose log is
// in memory): evidence, hypotheses, and a status change (proposal,
// execution) per iteration. The databases wait for the disk on commit.
func BenchmarkWrite(b *testing.B) {
	sqltest.ForEach(b, func(b *testing.B, db sqltest.Backend) {
		ctx := context.Background()
		st, err := speculative.NewSteward(ctx, trace.NewMemoryLog(), open(b, db, db.OpenNew(b)))
		if err != nil {
			b.Fatal(err)
		}
		b.Run("evidence", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if _, err := st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "success": true, "i": i}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("hypothesis", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := st.PersistHypothesis(ctx, "s1", speculative.Hypothesis{Content: "idea"}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("status", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				id, err := st.ProposeStatus(ctx, "c2", speculative.StatusRefuted, speculative.NonFragility{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := st.Execute(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
