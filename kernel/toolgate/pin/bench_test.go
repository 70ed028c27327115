package pin_test

import (
	"fmt"
	"testing"

	"github.com/verity-go/verity/kernel/toolgate/pin"
)

// listingOf is a server of n tools, each at version v.
func listingOf(n, v int) pin.Listing {
	l := pin.Listing{Server: "files"}
	for i := range n {
		raw := fmt.Sprintf(`{"name":"tool_%d","description":"version %d","inputSchema":{"type":"object"}}`, i, v)
		name, h, err := pin.HashDefinition([]byte(raw))
		if err != nil {
			panic(err)
		}
		l.Tools = append(l.Tools, pin.Tool{Name: name, Hash: h, Definition: []byte(raw)})
	}
	return l
}

// BenchmarkCheck is the per-call question: is the tool at its pin?
func BenchmarkCheck(b *testing.B) {
	s, _ := pin.State{}.Listed(listingOf(100, 0))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Check("files", "tool_42"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListedUnchanged is a tools/list of 100 tools at their pins:
// no entry to write.
func BenchmarkListedUnchanged(b *testing.B) {
	l := listingOf(100, 0)
	s, _ := pin.State{}.Listed(l)
	b.ReportAllocs()
	for b.Loop() {
		if _, out := s.Listed(l); len(out.Entries) != 0 {
			b.Fatal(out.Entries)
		}
	}
}

// BenchmarkListedAllChanged is a hostile server changing all of 10,000
// tools at once: one drift entry each, in time linear in the tools.
func BenchmarkListedAllChanged(b *testing.B) {
	s, _ := pin.State{}.Listed(listingOf(10000, 0))
	changed := listingOf(10000, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, out := s.Listed(changed); len(out.Entries) != 10000 {
			b.Fatal(len(out.Entries))
		}
	}
}

// BenchmarkHashDefinition hashes a definition of about 1 KiB.
func BenchmarkHashDefinition(b *testing.B) {
	def := []byte(fmt.Sprintf(`{"name":"read_file","description":%q,"inputSchema":{"type":"object","properties":{"path":{"type":"string"}}},"annotations":{"readOnlyHint":true}}`,
		fmt.Sprint(make([]int, 300))))
	b.SetBytes(int64(len(def)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := pin.HashDefinition(def); err != nil {
			b.Fatal(err)
		}
	}
}
