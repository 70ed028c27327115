package trace

import (
	"crypto/sha256"
	"slices"
	"testing"
	"time"
)

// BenchmarkVerifierAddVsSHA256 puts the cost of Verifier.Add next to its
// floor, one SHA-256 of the same preimage bytes (290 bytes for a
// 200-byte payload), measured in one run: a block of Adds and a block of
// bare hashes of the same entries alternate, and the figures reported are
// the medians over the pairs of blocks (add-ns/entry, sha256-ns/entry and
// their ratio add/sha256), so that a busy machine's pauses, which hit a
// few blocks, do not decide them. ns/op is one entry's Add and hash.
func BenchmarkVerifierAddVsSHA256(b *testing.B) {
	const block = 64
	es := benchEntries(b, 16*block)
	pres := make([][]byte, len(es))
	for i, e := range es {
		pres[i] = appendPreimage(nil, e.Seq, e.Prev, e.Kind, e.Time, e.Payload)
	}
	b.ReportAllocs()
	var v Verifier
	var adds, bares, ratios []float64
	var sink Hash
	i := 0
	for b.Loop() {
		if i == len(es) {
			v, i = Verifier{}, 0
		}
		if i%block == 0 {
			start := time.Now()
			for _, e := range es[i : i+block] {
				if err := v.Add(e); err != nil {
					b.Fatal(err)
				}
			}
			mid := time.Now()
			for _, p := range pres[i : i+block] {
				sink = sha256.Sum256(p)
			}
			add, bare := float64(mid.Sub(start)), float64(time.Since(mid))
			adds, bares, ratios = append(adds, add/block), append(bares, bare/block), append(ratios, add/bare)
		}
		i++
	}
	if sink == (Hash{}) || len(ratios) == 0 {
		return
	}
	median := func(xs []float64) float64 { slices.Sort(xs); return xs[len(xs)/2] }
	b.ReportMetric(median(adds), "add-ns/entry")
	b.ReportMetric(median(bares), "sha256-ns/entry")
	b.ReportMetric(median(ratios), "add/sha256")
}
