package main

import (
	"context"
	"os"
	"testing"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/scenario"
)

// FuzzParseToolsList: any bytes give tool names or an error, never a
// panic, and every name returned is non-empty.
func FuzzParseToolsList(f *testing.F) {
	if data, err := os.ReadFile(fsTools); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a"}],"nextCursor":"x"}}`))
	f.Add([]byte(`{"tools":[{"name":""}]}`))
	f.Add([]byte(`{"tools":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		names, err := parseToolsList(data)
		if err != nil {
			return
		}
		for _, n := range names {
			if n == "" {
				t.Fatal("an empty tool name")
			}
		}
	})
}

// FuzzPolicyCases: any cases file is read or refused, never a panic, and
// every case read can be run against the filesystem policy, each failure
// saying what differed.
func FuzzPolicyCases(f *testing.F) {
	if data, err := os.ReadFile(fsCases); err == nil {
		f.Add(data)
	}
	if data, err := os.ReadFile(fsScenarios); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"cases":[{"name":"x","tool":"t","expect":"allow","before":[{"tool":"u","arguments":[1,2]}],"labels":["a"],"at":"2026-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"cases":[{"name":"x","tool":"t","expect":"refuse","principal":{"subject":"s","groups":["g"]},"rule":"#-1"}]}`))
	f.Add([]byte(`{"cases":[{"name":"x","steps":[{"name":"a","call":{"tool":"move_file"}},{"approve":{"request":"a"}},{"restart":{}},{"result":{"call":"a"}}]}]}`))
	policy, err := toolgate.LoadPolicy(fsPolicy)
	if err != nil {
		f.Fatal(err)
	}
	runner, err := scenario.NewRunner(policy)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cases, err := scenario.Parse(data)
		if err != nil {
			return
		}
		for _, c := range cases {
			for _, fl := range runner.Run(context.Background(), c).Failures {
				if len(fl.Problems) == 0 {
					t.Fatalf("a failure with no problem: %+v", fl)
				}
			}
		}
	})
}
