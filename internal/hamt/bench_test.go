package hamt

import (
	"fmt"
	"strconv"
	"testing"
)

type strMap = Map[string, int, Seeded[string]]

func benchMap(n int) (strMap, []string) {
	keys := make([]string, n)
	var m strMap
	for i := range keys {
		keys[i] = "var" + strconv.Itoa(i)
		m = m.Set(keys[i], i)
	}
	return m, keys
}

var sizes = []int{10, 10_000}

func BenchmarkGet(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			m, keys := benchMap(n)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok := m.Get(keys[i]); !ok {
					b.Fatal("missing key")
				}
				if i++; i == n {
					i = 0
				}
			}
		})
	}
}

// BenchmarkSet replaces the value of an existing key: one path copy.
func BenchmarkSet(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			m, keys := benchMap(n)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				m = m.Set(keys[i], i)
				if i++; i == n {
					i = 0
				}
			}
		})
	}
}

// BenchmarkBuilderSet is two Sets through a Builder that has room for
// them (Grow), the way the kernel applies a two-effect action.
func BenchmarkBuilderSet(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			m, keys := benchMap(n)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				bl := m.Builder()
				bl.Grow(2)
				bl.Set(keys[i], i)
				bl.Set(keys[n-1-i], i)
				m = bl.Map()
				if i++; i == n {
					i = 0
				}
			}
		})
	}
}
