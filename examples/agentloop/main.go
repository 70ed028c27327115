// Command agentloop is Verity's first demonstration: an agent's tool
// calls going through Verity's gate, and the log that proves what
// happened.
//
// A scripted agent tidies a small in-memory workspace with three real
// tools (read_file, write_file, delete_file) under the policy in
// testdata/policy.json, the same kind of file verity-mcp takes in front
// of an MCP server. In under a second it shows:
//
//   - a refusal by an argument rule: nothing under /work/secrets may be
//     touched, however the path is written ("/work/notes/../secrets/…"
//     included), and the tool never runs;
//   - an approval: a deletion waits for a person, runs once on a yes and
//     never on a no;
//   - a budget hit: the agent has 2 units, and the call that would
//     overspend is refused, with the reason the agent reads;
//   - a verified log: every decision is on a hash-chained log file that
//     verifies, a copy with one byte changed does not, and a gate started
//     again over the log resumes the agent with what it had left.
//
// The log is a file in a temporary directory, removed at the end, unless
// -log names a new file to keep it in:
//
//	go run ./examples/agentloop -log agent.trace
//	go run ./examples/verity verify agent.trace
//
// examples/seedtour tours the parts the gate is built on (the kernel,
// claims and approvals, the speculative lane, replay).
package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// policyFile is the demonstration's policy, as testdata/policy.json holds
// it.
//
//go:embed testdata/policy.json
var policyFile []byte

// policyPath is where the policy is, for the reader.
const policyPath = "examples/agentloop/testdata/policy.json"

// agent is the caller every call is charged to.
const agent = "agent"

func main() {
	logPath := flag.String("log", "", "keep the log in this new `file` (default: a temporary file, removed at the end)")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *logPath); err != nil {
		fmt.Fprintln(os.Stderr, "agentloop:", err)
		os.Exit(1)
	}
}

// workspace is the agent's files, in memory: the tools' real state.
type workspace map[string]string

// tool runs one tool on the workspace; its error is the tool's failure.
func (w workspace) tool(name string, args map[string]string) (string, error) {
	p := args["path"]
	switch name {
	case "read_file":
		s, ok := w[p]
		if !ok {
			return "", fmt.Errorf("%s: no such file", p)
		}
		return s, nil
	case "write_file":
		w[p] = args["content"]
		return fmt.Sprintf("wrote %d bytes to %s", len(args["content"]), p), nil
	case "delete_file":
		if _, ok := w[p]; !ok {
			return "", fmt.Errorf("%s: no such file", p)
		}
		delete(w, p)
		return "deleted " + p, nil
	}
	return "", fmt.Errorf("no tool %q", name)
}

// step is one call the agent makes, and what the person says if asked.
type step struct {
	tool   string
	args   map[string]string
	answer string // "yes …" or "no …": the person's answer and reason, when asked
}

// script is what the agent does: the calls a model would ask for.
var script = []step{
	{tool: "read_file", args: map[string]string{"path": "/work/notes/todo.md"}},
	{tool: "read_file", args: map[string]string{"path": "/work/secrets/api-key"}},
	{tool: "read_file", args: map[string]string{"path": "/work/notes/../secrets/api-key"}},
	{tool: "delete_file", args: map[string]string{"path": "/work/reports/2025.txt"}, answer: "yes: archived elsewhere"},
	{tool: "delete_file", args: map[string]string{"path": "/work/reports/2026.txt"}, answer: "no: still in use"},
	{tool: "write_file", args: map[string]string{"path": "/work/notes/summary.md", "content": "2025 report archived."}},
	{tool: "read_file", args: map[string]string{"path": "/work/notes/summary.md"}},
	{tool: "read_file", args: map[string]string{"path": "/work/notes/todo.md"}},
}

// clock is a deterministic clock, so that the demonstration writes the
// same log every time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time {
	c.t = c.t.Add(100 * time.Millisecond)
	return c.t
}

// run writes the demonstration's log to keep, a new file, or (if keep is
// empty) to a temporary file it removes.
func run(ctx context.Context, w io.Writer, keep string) error {
	path := keep
	if keep == "" {
		dir, err := os.MkdirTemp("", "verity-agentloop-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "agent.trace")
	} else if _, err := os.Lstat(keep); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("-log %s: the demonstration writes a new log; give a path where no file is", keep)
	}

	policy, err := toolgate.ParsePolicy(policyFile)
	if err != nil {
		return err
	}
	compiled, err := policy.Compile()
	if err != nil {
		return err
	}
	store, err := trace.OpenFile(path, trace.FileOptions{})
	if err != nil {
		return err
	}
	clk := &clock{t: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
	log, err := trace.NewLog(store, trace.WithClock(clk.now))
	if err != nil {
		_ = store.Close()
		return err
	}
	defer log.Close() // on an early return; closed before the log is checked
	n := 0
	gate, err := toolgate.New(ctx, log, compiled, toolgate.WithClock(clk.now),
		toolgate.WithIDs(func() string { n++; return fmt.Sprintf("id-%d", n) }))
	if err != nil {
		return err
	}

	files := workspace{
		"/work/notes/todo.md":    "archive the 2025 report; write a summary",
		"/work/reports/2025.txt": "revenue 2025 …",
		"/work/reports/2026.txt": "revenue 2026 …",
		"/work/secrets/api-key":  "sk-do-not-leak",
	}
	budget := policy.Budget
	fmt.Fprintf(w, "An agent tidies a small workspace through Verity's gate. The policy\n")
	fmt.Fprintf(w, "(%s) gives it %s units: each call costs 0.5,\n", policyPath, budget)
	fmt.Fprintf(w, "a deletion waits for a person's yes, and nothing under /work/secrets\n")
	fmt.Fprintf(w, "may be touched.\n\n")

	for i, s := range script {
		if err := call(ctx, w, gate, files, i+1, s); err != nil {
			return err
		}
	}

	// The log: close it, then check it as anyone holding it would.
	head := log.Head()
	if err := log.Close(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nThe log holds %d entries, each sealed with the hash of the one before.\n", head.Size)
	ro, err := trace.OpenFileReadOnly(path) // verifies the whole chain
	if err != nil {
		return fmt.Errorf("the log does not verify: %w", err)
	}
	got, err := ro.Head(ctx)
	_ = ro.Close()
	if err != nil {
		return err
	}
	if got != head {
		return fmt.Errorf("the log's head is %s, the run wrote %s", got, head)
	}
	fmt.Fprintf(w, "  verified: every entry checks, from the first to the last\n")
	if err := tamper(w, path); err != nil {
		return err
	}
	left, err := resume(ctx, path, compiled)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  started again over the log, the gate resumes the agent with %s of %s left\n", left, budget)

	names := slices.Sorted(func(yield func(string) bool) {
		for name := range files {
			if !yield(name) {
				return
			}
		}
	})
	fmt.Fprintf(w, "\nThe workspace now: %s\n", strings.Join(names, " "))
	if keep != "" {
		fmt.Fprintf(w, "log kept in %s (check it: go run ./examples/verity verify %s)\n", keep, keep)
	}
	return nil
}

// call puts one step to the gate and acts on its decision, as a host
// does: run the tool when allowed, ask the person when the gate asks,
// give the agent the explanation when refused.
func call(ctx context.Context, w io.Writer, gate *toolgate.Gate, files workspace, n int, s step) error {
	args := fmt.Sprintf(`{"path":%q}`, s.args["path"])
	if c, ok := s.args["content"]; ok {
		args = fmt.Sprintf(`{"path":%q,"content":%q}`, s.args["path"], c)
	}
	c := toolgate.Call{ID: fmt.Sprintf("call-%d", n), Caller: agent, Tool: s.tool, Arguments: []byte(args)}
	fmt.Fprintf(w, "%d. %-12s %s\n", n, s.tool, s.args["path"])
	d, err := gate.Before(ctx, c)
	if err != nil {
		return err
	}
	if d.Verdict == toolgate.AskApproval {
		fmt.Fprintf(w, "   asks a person: %s\n", d.Approval.Question)
		yes, reason, _ := strings.Cut(s.answer, ": ")
		if yes == "yes" {
			fmt.Fprintf(w, "   the person says yes (%s)\n", reason)
			if _, err := gate.Approve(ctx, d.Approval.ID, "person", reason); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(w, "   the person says no (%s)\n", reason)
			if err := gate.Deny(ctx, d.Approval.ID, "person", reason); err != nil {
				return err
			}
		}
		if d, err = gate.Before(ctx, c); err != nil {
			return err
		}
	}
	switch d.Verdict {
	case toolgate.Allow:
		out, terr := files.tool(s.tool, s.args)
		if _, err := gate.After(ctx, d.Call, toolgate.Result{Output: []byte(out), Err: terr}); err != nil {
			return err
		}
		m, _ := gate.Meter(agent)
		b := m.Budget()
		if terr != nil {
			fmt.Fprintf(w, "   ran and failed: %v (spent %s, %s left)\n", terr, b.Net(), b.Remaining())
		} else {
			fmt.Fprintf(w, "   ran: %s (spent %s, %s left)\n", out, b.Net(), b.Remaining())
		}
	case toolgate.Refuse:
		fmt.Fprintf(w, "   refused, and the agent is told: %s\n", d.Explanation)
	default:
		return fmt.Errorf("call %d: unexpected verdict %v", n, d.Verdict)
	}
	return nil
}

// tamper rewrites the person's no as a yes in a copy of the log (the
// same number of bytes, as a careful forger would) and shows that the
// copy no longer verifies.
func tamper(w io.Writer, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	i := bytes.Index(b, []byte(`"decision":"REJECTED"`))
	if i < 0 {
		return errors.New("the log holds no refused approval")
	}
	copy(b[i:], `"decision":"APPROVED"`)
	cp := path + ".forged"
	if err := os.WriteFile(cp, b, 0o600); err != nil {
		return err
	}
	defer os.Remove(cp)
	ro, err := trace.OpenFileReadOnly(cp)
	if err == nil {
		_ = ro.Close()
		return errors.New("a forged copy of the log verified")
	}
	var (
		corrupt *trace.CorruptRecordError
		broken  *trace.ChainBreakError
	)
	switch {
	case errors.As(err, &corrupt):
		fmt.Fprintf(w, "  a copy in which the person's no is rewritten as a yes fails at entry %d: %s\n", corrupt.Index, firstWords(corrupt.Reason))
	case errors.As(err, &broken):
		fmt.Fprintf(w, "  a copy in which the person's no is rewritten as a yes fails at entry %d: the chain breaks\n", broken.Index)
	default:
		return fmt.Errorf("a forged copy of the log: %w", err)
	}
	return nil
}

// firstWords is reason up to its first colon ("hash mismatch: stored …"
// is "hash mismatch").
func firstWords(reason string) string {
	s, _, _ := strings.Cut(reason, ":")
	return s
}

// resume starts a gate again over the log and returns what the agent has
// left.
func resume(ctx context.Context, path string, compiled *toolgate.Compiled) (kernel.Cost, error) {
	store, err := trace.OpenFile(path, trace.FileOptions{})
	if err != nil {
		return 0, err
	}
	log, err := trace.NewLog(store)
	if err != nil {
		_ = store.Close()
		return 0, err
	}
	defer log.Close()
	gate, err := toolgate.New(ctx, log, compiled)
	if err != nil {
		return 0, err
	}
	m, ok := gate.Meter(agent)
	if !ok {
		return 0, errors.New("the gate started over the log does not know the agent")
	}
	return m.Budget().Remaining(), nil
}
