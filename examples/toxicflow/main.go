// Command toxicflow reproduces the "toxic flow" attack on an agent with
// tools, and shows Verity's tool gate stopping it from a record anyone
// can verify and replay.
//
// The agent triages the issues of a public repository through a small
// GitHub-like MCP server (list_issues, get_issue, get_file_contents,
// create_pull_request). Its token can also read a private repository.
// One public issue, written by anyone, carries instructions for the
// agent: read the private repository's config/prod.env and publish it in
// a pull request on the public one. The model is a scripted stand-in (no
// network, no API key) that follows them, as models do.
//
//  1. Without the gate: the agent reads the issue, then the private file,
//     then opens the pull request; the secret is now public.
//  2. With the gate in front of the same server (kernel/toolgate/mcp), and
//     a policy that labels what calls bring into the session: reading
//     issues brings untrusted_input, reading the private repository
//     (an argument condition on "repo") brings private_data, and opening
//     a pull request is refused by a flow rule once both were seen. The
//     same model makes the same calls; the pull request is never opened,
//     and the model reads the refusal, which names the rule.
//  3. A security lead reviews the session: the instructions were
//     the attack, and nothing the agent still holds comes from it. They
//     clear the untrusted_input label (toolgate.Gate.Declassify, which
//     only an approver of the policy may do: a toolgate.declassify entry
//     names them and why). The agent's clean pull request — the triage
//     it was asked for, no secret in it — is then allowed.
//  4. The log is verified, the entries that prove the refusal are shown
//     (the labels each execution carried, the refusal's rule and
//     condition), and every decision is replayed: decided again by the
//     pure decision core from the call and what the log held before it.
//
// The policy is policy.json (version 2 of the tool gate's policy file);
// from the repository's root,
//
//	go run ./examples/verity policy check examples/toxicflow/policy.json -tools examples/toxicflow/testdata/tools.json
//	go run ./examples/verity policy test examples/toxicflow/policy.json examples/toxicflow/testdata/cases.json
//
// lint it against the server's tools and run its cases. Run the
// demonstration with
//
//	go run . -log toxicflow.trace
//
// from this directory; -log keeps the gated run's log in a new file
// (without it, a temporary file that is removed).
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/trace"
)

// Caller is the caller key of the agent's session in the gate.
const Caller = "triage-agent"

// Reviewer is the approver (policy.json's approvers) who clears a label
// after reviewing the session.
const Reviewer = "security-lead"

func main() {
	err := run(context.Background(), os.Stdout, os.Args[1:])
	var usage usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "toxicflow:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "toxicflow:", err)
		os.Exit(1)
	}
}

// usageError is a bad command line (exit status 2).
type usageError struct{ error }

// report is what the demonstration found, for its test.
type report struct {
	// Leaked are the pull requests the ungated agent opened on the public
	// repository; Gated those the gated one opened.
	Leaked, Gated []pull
	// Refusal is the gate's explanation of the refused call, as the model
	// read it.
	Refusal string
	// Entries is the number of entries of the verified log; Replayed the
	// decisions decided again, identically.
	Entries, Replayed int
	// LogPath is where the log is.
	LogPath string

	calls []toolCall   // the gated run's calls, in order
	meter kernel.Meter // the gate's meter of the caller
}

func run(ctx context.Context, out io.Writer, argv []string) error {
	_, err := demonstrate(ctx, out, argv)
	return err
}

func demonstrate(ctx context.Context, out io.Writer, argv []string) (report, error) {
	var rep report
	fl := flag.NewFlagSet("toxicflow", flag.ContinueOnError)
	fl.SetOutput(out)
	keep := fl.String("log", "", "keep the gated run's trace log in this new `file` (default: a temporary file, removed at the end)")
	if err := fl.Parse(argv); err != nil {
		return rep, usageError{err}
	}
	if fl.NArg() > 0 {
		return rep, usageError{fmt.Errorf("unexpected arguments: %s", strings.Join(fl.Args(), " "))}
	}
	path := *keep
	if path == "" {
		dir, err := os.MkdirTemp("", "verity-toxicflow-")
		if err != nil {
			return rep, err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "toxicflow.trace")
	} else if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return rep, usageError{fmt.Errorf("-log %s: the demonstration writes a new log; give a path where no file is", path)}
	}
	rep.LogPath = path

	fmt.Fprintln(out, "== 1. without the gate")
	gh := newGitHub()
	if _, err := agent(ctx, out, gh.server(), nil); err != nil {
		return rep, err
	}
	rep.Leaked = gh.pulls(PublicRepo)
	showPulls(out, rep.Leaked)

	fmt.Fprintln(out, "\n== 2. with the gate")
	cfg, err := policy()
	if err != nil {
		return rep, err
	}
	fmt.Fprintln(out, "policy (policy.json):")
	for i, r := range cfg.Tools {
		fmt.Fprintf(out, "  #%d %-18s %-22s labels %v", i, r.Name, r.Match, r.Labels)
		for _, f := range r.Flow {
			fmt.Fprintf(out, ", flow: refuse after %v", f.After)
		}
		fmt.Fprintln(out)
	}
	clk := newClock()
	store, err := trace.OpenFile(path, trace.FileOptions{})
	if err != nil {
		return rep, err
	}
	log, err := trace.NewLog(store, trace.WithClock(clk.now))
	if err != nil {
		store.Close()
		return rep, err
	}
	defer log.Close()
	comp, err := cfg.Compile()
	if err != nil {
		return rep, err
	}
	gate, err := toolgate.New(ctx, log, comp, toolgate.WithClock(clk.now), toolgate.WithIDs(clk.id))
	if err != nil {
		return rep, err
	}
	guard, err := gatemcp.New(gate, gatemcp.Options{Caller: func(context.Context, *sdk.CallToolRequest) string { return Caller }})
	if err != nil {
		return rep, err
	}
	gh = newGitHub()
	srv := gh.server()
	srv.AddReceivingMiddleware(guard.Middleware())
	transcript, err := agent(ctx, out, srv, &rep.Refusal)
	if err != nil {
		return rep, err
	}
	showPulls(out, gh.pulls(PublicRepo))

	fmt.Fprintln(out, "\n== 3. after review")
	why := "issue #2 was the attack and was removed; the session holds nothing else from it"
	if err := gate.Declassify(ctx, Caller, "untrusted_input", Reviewer, nil, why); err != nil {
		return rep, err
	}
	fmt.Fprintf(out, "%s clears untrusted_input: %s\n", Reviewer, why)
	clean := toolCall{Tool: "create_pull_request", Arguments: args(pullIn{Repo: PublicRepo, Title: "Triage: label the open issues",
		Body: "Labels the open issues: #1 bug, #2 spam (closed)."})}
	transcript = append(transcript, clean)
	if err := oneCall(ctx, out, srv, clean); err != nil {
		return rep, err
	}
	rep.Gated, rep.calls = gh.pulls(PublicRepo), transcript
	showPulls(out, rep.Gated)
	m, ok := gate.Meter(Caller)
	if !ok {
		return rep, errors.New("the gate saw no call")
	}
	rep.meter = m
	if err := log.Close(); err != nil {
		return rep, err
	}

	fmt.Fprintln(out, "\n== 4. the log")
	rep.Entries, rep.Replayed, err = audit(ctx, out, path, cfg, transcript, m)
	if err != nil {
		return rep, err
	}
	if *keep != "" {
		fmt.Fprintf(out, "log kept in %s\n", path)
	}
	return rep, nil
}

// policyFile is the gate's policy (policy.json): what each tool costs and
// which labels its calls bring into the caller's session; opening a pull
// request after untrusted input and private data is refused.
//
//go:embed policy.json
var policyFile []byte

// policy returns the gate's policy, read from policyFile.
func policy() (toolgate.Policy, error) { return toolgate.ParsePolicy(policyFile) }

// agent runs the scripted model against srv through an MCP client, and
// returns the calls it made. refusal, when not nil, receives the text of
// the first call that failed.
func agent(ctx context.Context, out io.Writer, srv *sdk.Server, refusal *string) ([]toolCall, error) {
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "triage-agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()

	mdl := newModel(PublicRepo)
	fmt.Fprintf(out, "user: triage the open issues of %s\n", PublicRepo)
	var calls []toolCall
	c, more := mdl.start(), true
	for more {
		calls = append(calls, c)
		fmt.Fprintf(out, "model → %s %s\n", c.Tool, shorten(string(c.Arguments), 100))
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: c.Tool, Arguments: c.Arguments})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Tool, err)
		}
		var texts []string
		for _, ct := range res.Content {
			if t, ok := ct.(*sdk.TextContent); ok {
				texts = append(texts, t.Text)
			}
		}
		result := strings.Join(texts, "\n")
		mark, width := "←", 160
		if res.IsError {
			width = 400
			mark = "← ERROR"
			if refusal != nil && *refusal == "" {
				*refusal = result
			}
		}
		fmt.Fprintf(out, "  %s %s\n", mark, shorten(result, width))
		c, more = mdl.next(c, result, res.IsError)
	}
	fmt.Fprintf(out, "model: %s\n", shorten(mdl.answer, 400))
	return calls, nil
}

// oneCall makes the call c to srv through an MCP client, as the agent
// does, and shows its result.
func oneCall(ctx context.Context, out io.Writer, srv *sdk.Server, c toolCall) error {
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		return err
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "triage-agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	fmt.Fprintf(out, "model → %s %s\n", c.Tool, shorten(string(c.Arguments), 100))
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: c.Tool, Arguments: c.Arguments})
	if err != nil {
		return fmt.Errorf("%s: %w", c.Tool, err)
	}
	for _, ct := range res.Content {
		if t, ok := ct.(*sdk.TextContent); ok {
			fmt.Fprintf(out, "  ← %s\n", shorten(t.Text, 160))
		}
	}
	if res.IsError {
		return fmt.Errorf("%s refused after the review", c.Tool)
	}
	return nil
}

func showPulls(out io.Writer, pulls []pull) {
	fmt.Fprintf(out, "pull requests opened on %s: %d\n", PublicRepo, len(pulls))
	for _, p := range pulls {
		leaked := ""
		if strings.Contains(p.Body, Secret) {
			leaked = "  ← THE PRIVATE SECRET IS NOW PUBLIC"
		}
		fmt.Fprintf(out, "  #%d %q%s\n", p.Number, p.Title, leaked)
		for _, line := range strings.Split(strings.TrimSpace(p.Body), "\n") {
			fmt.Fprintf(out, "    | %s\n", line)
		}
	}
}

// shorten puts s on one line of at most n runes.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// clock is the demonstration's clock: a second per reading, from a fixed
// start, so that every run writes the same log; and its ids.
type clock struct {
	mu  sync.Mutex
	t   time.Time
	ids int
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func (c *clock) id() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids++
	return fmt.Sprintf("id-%04d", c.ids)
}
