package gatelog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// entryCase is a payload of a kind, good (ok) or not.
type entryCase struct {
	kind, payload string
	ok            bool
}

// checkDecodes: Decode reads each good case and writes it back as it was
// (canonical JSON), and refuses each bad one with one line wrapping
// ErrDecode.
func checkDecodes(t *testing.T, cases []entryCase) {
	t.Helper()
	for i, c := range cases {
		v, err := gatelog.Decode(trace.Entry{Kind: c.kind, Payload: []byte(c.payload)})
		if (err == nil) != c.ok {
			t.Errorf("%d %s %s: error %v, want ok=%v", i, c.kind, c.payload, err, c.ok)
			continue
		}
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("%d: a two-line error %q", i, err)
			}
			if !errors.Is(err, gatelog.ErrDecode) {
				t.Errorf("%d: %v does not wrap ErrDecode", i, err)
			}
			continue
		}
		b, err := canon.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := canon.Transform([]byte(c.payload))
		if string(b) != string(want) {
			t.Errorf("%d: decoded and written again: %s, want %s", i, b, want)
		}
	}
}

// decodeRoundTrips is the fuzzers' property: a payload of kind decodes
// or is an error wrapping ErrDecode, never a panic; what decodes writes
// back to canonical JSON that decodes to the same value.
func decodeRoundTrips(t *testing.T, kind string, payload []byte) {
	v, err := gatelog.Decode(trace.Entry{Kind: kind, Payload: payload})
	if err != nil {
		if !errors.Is(err, gatelog.ErrDecode) {
			t.Fatalf("%v does not wrap ErrDecode", err)
		}
		return
	}
	b, err := canon.Marshal(v)
	if err != nil {
		t.Fatalf("decoded %T, cannot write it: %v", v, err)
	}
	again, err := gatelog.Decode(trace.Entry{Kind: kind, Payload: b})
	if err != nil {
		t.Fatalf("written back %s, refused: %v", b, err)
	}
	if b2, _ := canon.Marshal(again); string(b2) != string(b) {
		t.Fatalf("not stable: %s then %s", b, b2)
	}
}
