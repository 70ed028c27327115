package sqlbackend

import (
	"strings"
	"testing"

	"github.com/verity-go/verity/internal/sqlmigrate"
)

// TestEvidenceQueriesNeverReadHypotheses: Guard 4 in the queries — the
// statements that write and read evidence name the evidence table and
// never the hypotheses table.
func TestEvidenceQueriesNeverReadHypotheses(t *testing.T) {
	for _, d := range []sqlmigrate.Dialect{sqlmigrate.SQLite, sqlmigrate.Postgres} {
		q := newQueries(d)
		for _, s := range []string{q.evidence, q.putEvidence} {
			if !strings.Contains(s, EvidenceTable) || strings.Contains(s, HypothesesTable) {
				t.Fatalf("%s: evidence query %q", d, s)
			}
		}
	}
}
