package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// TestAgentLoop runs the demonstration and checks each of its claims:
// the refusals by argument rule (however the path is written), the
// approval (yes runs, no does not), the budget hit, the verified log,
// the forged copy refused, the resumed budget, and the workspace the
// tools really changed.
func TestAgentLoop(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, ""); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{
		"1. read_file    /work/notes/todo.md\n   ran: archive the 2025 report; write a summary (spent 0.5, 1.5 left)\n",
		"2. read_file    /work/secrets/api-key\n   refused, and the agent is told: tool \"read_file\" (rule #0 \"secrets-stay-shut\", effect): nothing under /work/secrets is for the agent\n",
		"3. read_file    /work/notes/../secrets/api-key\n   refused, and the agent is told: tool \"read_file\" (rule #0 \"secrets-stay-shut\", effect)",
		"   the person says yes (archived elsewhere)\n   ran: deleted /work/reports/2025.txt (spent 1, 1 left)\n",
		"   the person says no (still in use)\n   refused, and the agent is told: tool \"delete_file\" (rule #3 \"delete\", approval): DELETE denied by person: still in use\n",
		"8. read_file    /work/notes/todo.md\n   refused, and the agent is told: tool \"read_file\" (rule #1 \"read\", kernel): action \"read_file\" rejected: budget: cost 0.5, remaining 0\n",
		"The log holds 17 entries",
		"  verified: every entry checks",
		"rewritten as a yes fails at entry 10: hash mismatch\n",
		"the gate resumes the agent with 0 of 2 left\n",
		"The workspace now: /work/notes/summary.md /work/notes/todo.md /work/reports/2026.txt /work/secrets/api-key\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q\n%s", want, s)
		}
	}
	// Plain words on the first screen: none of the seeds' vocabulary.
	for _, jargon := range []string{"ClaimBundle", "guard-1", "bundle", "speculative", "T1"} {
		if strings.Contains(s, jargon) {
			t.Errorf("output speaks of %q:\n%s", jargon, s)
		}
	}
	// The run is deterministic: the same output every time.
	var again bytes.Buffer
	if err := run(context.Background(), &again, ""); err != nil {
		t.Fatal(err)
	}
	if again.String() != s {
		t.Errorf("two runs differ:\n%s\n---\n%s", s, again.String())
	}
}

// TestAgentLoopKeepsItsLog: with -log the log is written to the file
// named and kept; it verifies, records each refusal and the approvals,
// and an existing file is refused and left alone.
func TestAgentLoopKeepsItsLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.trace")
	var out bytes.Buffer
	if err := run(context.Background(), &out, path); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "log kept in "+path) {
		t.Errorf("output does not name the kept log:\n%s", out.String())
	}
	f, err := trace.OpenFileReadOnly(path) // verifies the chain
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for e, err := range f.Entries(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		kinds[e.Kind]++
	}
	f.Close()
	// 3 refusals by the gate (two by argument rule, one denied), the
	// budget's refusal by the kernel, 4 tools run, 2 answers.
	for kind, want := range map[string]int{"toolgate.refuse": 3, "kernel.reject": 1, "kernel.execute": 4, "toolgate.result": 4, "claims.approve": 2} {
		if kinds[kind] != want {
			t.Errorf("%d %s entries, want %d (all: %v)", kinds[kind], kind, want, kinds)
		}
	}
	before, _ := os.ReadFile(path)
	if err := run(context.Background(), &bytes.Buffer{}, path); err == nil || !strings.Contains(err.Error(), "new log") {
		t.Errorf("a second run on the same file: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("a refused run changed the existing file")
	}
}

// TestAgentLoopPolicyIsTheFile: the policy the demonstration runs is the
// file the README points to, and it compiles.
func TestAgentLoopPolicyIsTheFile(t *testing.T) {
	p, err := toolgate.LoadPolicy(filepath.Join("testdata", "policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Compile(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("testdata", "policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, policyFile) {
		t.Error("the embedded policy is not testdata/policy.json")
	}
}
