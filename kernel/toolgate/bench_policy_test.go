package toolgate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/verity-go/verity/kernel/toolgate"
)

// policyOfRules writes a valid policy file of n rules: tool names and
// patterns mixed, as a large catalogue has them.
func policyOfRules(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"version": 1, "budget": "1000", "min_cost": "0.001", "tools": [`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if i%4 == 3 {
			fmt.Fprintf(&b, `{"match": "svc%d_*", "cost": "0.01", "tier": "WRITE_LIMITED"}`, i)
		} else {
			fmt.Fprintf(&b, `{"match": "tool_%d", "cost": "0.01", "description": "tool number %d"}`, i, i)
		}
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkLoadPolicy is ParsePolicy of a file of 1,000, 4,000 and 10,000 rules:
// its time grows linearly with the number of rules.
func BenchmarkLoadPolicy(b *testing.B) {
	for _, n := range []int{1_000, 4_000, 10_000} {
		data := policyOfRules(n)
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := toolgate.ParsePolicy(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
