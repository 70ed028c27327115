package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/scenario"
)

// policyTest runs "verity policy test POLICY CASES": each case of the
// cases file, a single call decided by the policy's decision core or a
// scenario played on a gate (the format: package
// kernel/toolgate/scenario, and REFERENCE.md). A failing case is named
// with what differed, step by step.
func policyTest(ctx context.Context, e *env, args []string) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(e.stdout, policyUsage)
		return nil
	}
	if len(args) != 2 || strings.HasPrefix(args[0], "-") || strings.HasPrefix(args[1], "-") {
		return usagef("policy test: want POLICY CASES")
	}
	policy, err := toolgate.LoadPolicy(args[0])
	if err != nil {
		return err
	}
	runner, err := scenario.NewRunner(policy)
	if err != nil {
		return err
	}
	cases, err := readCases(args[1])
	if err != nil {
		return err
	}
	failed := 0
	for _, c := range cases {
		res := runner.Run(ctx, c)
		if res.Passed() {
			fmt.Fprintf(e.stdout, "PASS %s\n", c.Name())
			continue
		}
		failed++
		printFailure(e, c, res)
	}
	fmt.Fprintf(e.stdout, "%d/%d cases passed\n", len(cases)-failed, len(cases))
	if failed > 0 {
		return fmt.Errorf("%w: %d case(s) failed", errPolicyFindings, failed)
	}
	return nil
}

// readCases reads the cases file name (scenario.Parse).
func readCases(name string) ([]scenario.Case, error) {
	data, err := readInput(name, scenario.MaxSize)
	if err != nil {
		return nil, err
	}
	cases, err := scenario.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return cases, nil
}

// printFailure writes a failed case: a single call on one line and what
// it got on the next; a scenario's name, then each failing step, what
// differed and what it did.
func printFailure(e *env, c scenario.Case, res scenario.Result) {
	if !c.IsScenario() {
		f := res.Failures[0]
		fmt.Fprintf(e.stdout, "FAIL %s: %s\n", c.Name(), strings.Join(f.Problems, "; "))
		fmt.Fprintf(e.stdout, "     %s\n", f.Got)
		return
	}
	fmt.Fprintf(e.stdout, "FAIL %s\n", c.Name())
	for _, f := range res.Failures {
		fmt.Fprintf(e.stdout, "     %s: %s\n", f.Where(), strings.Join(f.Problems, "; "))
		if f.Got != "" {
			fmt.Fprintf(e.stdout, "       %s\n", f.Got)
		}
	}
}
