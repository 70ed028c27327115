package scenario

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/verity-go/verity/kernel/toolgate"
)

// FuzzParseScenarios: any bytes are read or refused, never a panic; a
// refusal is a *toolgate.ValidationError wrapping ErrInvalid with at least
// one violation, and a file read can be run, each failure naming a step of
// its case.
func FuzzParseScenarios(f *testing.F) {
	files, _ := filepath.Glob("testdata/scenarios/*.json")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"cases":[{"name":"x","tool":"t","expect":"allow","before":[{"tool":"u","arguments":[1,2]}],"labels":["a"],"at":"2026-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"cases":[{"name":"x","steps":[{"name":"a","call":{"tool":"delete_file","arguments":{"path":"/srv/data/a"}}},{"approve":{"request":"a","by":{"subject":"s","groups":["g"]}}},{"result":{"call":"a","cost":"1e3"}},{"restart":{}},{"expire":{},"expect":{"expired":0,"entries":[{"kind":"k","a":{"b":[1]}}]}}]}]}`))
	f.Add([]byte(`{"cases":[{"name":"x","caller_limit":1,"idle_callers":"1ns","steps":[{"name":"r","resume":{"call":{"tool":"t","id":"i","caller":"c"},"request_id":"z","answer":{"approved":false}}},{"unanswered":{"call":"r","waited":"0s"}},{"advance":"1h"}]}]}`))
	f.Add([]byte("\xef\xbb\xbf{\"cases\":[]}"))
	f.Add([]byte(`{"cases":[{"name":"x","steps":[{"deny":{"request_id":""},"expect":{"callers":{"live":0},"error":"","budget":"0.001","caller":""}}]}]}`))
	p, err := toolgate.LoadPolicy(policyFile)
	if err != nil {
		f.Fatal(err)
	}
	r, err := NewRunner(p)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cases, err := Parse(data)
		if err != nil {
			var ve *toolgate.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) || len(ve.Violations) == 0 {
				t.Fatalf("refused without violations: %v", err)
			}
			return
		}
		if len(cases) == 0 {
			t.Fatal("read, with no case")
		}
		for _, c := range cases {
			if len(c.w.Steps) > 64 {
				continue // long scenarios run slowly, not differently
			}
			res := r.Run(context.Background(), c)
			for _, fl := range res.Failures {
				if fl.Step < -1 || fl.Step >= max(len(c.w.Steps), 1) || len(fl.Problems) == 0 {
					t.Fatalf("failure %+v of a case with %d steps", fl, len(c.w.Steps))
				}
			}
		}
	})
}
