// Command verity-cedar is the operator's command for Cedar conditions
// on toolgate rules (kernel/toolgate/cedar), kept apart from verity so
// that the root module does not depend on cedar-go:
//
//	verity-cedar schema [-o FILE] -- UPSTREAM [ARGS…]
//	    runs an MCP server over stdio, lists its tools, and writes the
//	    Cedar schema of the entity model whose actions are its tools and
//	    whose context's arguments are typed from each inputSchema.
//	verity-cedar check -schema FILE POLICY
//	    validates Cedar text with Cedar's own validator against a schema:
//	    POLICY is a .cedar file, or a Verity policy file whose rules'
//	    "when" conditions in Cedar are checked each. Every error is
//	    printed, located (file:line:col, or the rule's JSON Pointer).
//	verity-cedar replay -policy P [-server NAME] LOG
//	    evaluates again every Cedar condition the gate recorded on the
//	    trace file LOG, from the recorded inputs, with P's rules, and
//	    fails on a different answer. verity replay checks the rest of the
//	    log; this is the Cedar part of it.
//
// Exit status: 0 when all is well, 1 when a check or a replay fails, 2
// for a usage error or an input that cannot be read.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/cedar"
	"github.com/verity-go/verity/trace"
)

const usage = `usage:
  verity-cedar schema [-o FILE] [-timeout 30s] -- UPSTREAM [ARGS...]
  verity-cedar check -schema FILE POLICY
  verity-cedar replay -policy P [-server NAME] LOG`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// failed is a check or replay that found problems (exit 1).
var errFailed = errors.New("failed")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "schema":
		err = cmdSchema(ctx, args[1:], stdout, stderr)
	case "check":
		err = cmdCheck(args[1:], stdout)
	case "replay":
		err = cmdReplay(ctx, args[1:], stdout)
	default:
		err = fmt.Errorf("unknown command %q", args[0])
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errFailed):
		return 1
	}
	fmt.Fprintf(stderr, "verity-cedar: %v\n%s\n", err, usage)
	return 2
}

func cmdSchema(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("schema", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "", "write the schema to FILE (default stdout)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long the upstream may take to list its tools")
	if err := fs.Parse(args); err != nil {
		return err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return errors.New("schema: give the upstream's command after --")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	tools, err := listTools(ctx, argv, stderr)
	if err != nil {
		return fmt.Errorf("schema: %s: %w", argv[0], err)
	}
	text, err := cedar.Schema(tools)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	if *out == "" {
		_, err = stdout.Write(text)
		return err
	}
	return os.WriteFile(*out, text, 0o644)
}

// listTools runs the upstream over stdio with the MCP SDK's client and
// returns its tools (every page).
func listTools(ctx context.Context, argv []string, stderr io.Writer) ([]cedar.Tool, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "verity-cedar", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	var out []cedar.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: inputSchema: %w", t.Name, err)
		}
		out = append(out, cedar.Tool{Name: t.Name, InputSchema: schema})
	}
	return out, nil
}

func cmdCheck(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	schemaPath := fs.String("schema", "", "the Cedar schema (verity-cedar schema writes one)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *schemaPath == "" || fs.NArg() != 1 {
		return errors.New("check: give -schema FILE and one POLICY")
	}
	stext, err := os.ReadFile(*schemaPath)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	v, err := cedar.NewValidator(*schemaPath, stext)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	path := fs.Arg(0)
	var problems []error
	if strings.HasSuffix(path, ".json") {
		p, err := toolgate.LoadPolicy(path)
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		n := 0
		for i, r := range p.Tools {
			if r.When == nil || r.When.Language != cedar.LanguageName {
				continue
			}
			n++
			name := fmt.Sprintf("%s#/tools/%d/when/text", path, i)
			if r.When.File != "" {
				name = r.When.File
			}
			problems = append(problems, v.Check(name, []byte(r.When.Source()))...)
		}
		if n == 0 {
			return fmt.Errorf("check: %s has no rule with a Cedar condition", path)
		}
	} else {
		text, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		problems = v.Check(path, text)
	}
	for _, p := range problems {
		fmt.Fprintln(stdout, toolgate.OneLine(p.Error()))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %d problems", errFailed, len(problems))
	}
	fmt.Fprintf(stdout, "%s: valid against %s\n", path, *schemaPath)
	return nil
}

func cmdReplay(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	policyPath := fs.String("policy", "", "the policy the gate enforced")
	server := fs.String("server", "", "the resource's id (cedar.Language.Server) the gate used")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *policyPath == "" || fs.NArg() != 1 {
		return errors.New("replay: give -policy P and one LOG")
	}
	p, err := toolgate.LoadPolicy(*policyPath)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	f, err := trace.OpenFileReadOnly(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	log, err := trace.NewLog(f)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if _, err := log.Verify(ctx); err != nil {
		return fmt.Errorf("%w: %s does not verify: %v", errFailed, fs.Arg(0), err)
	}
	mismatches, n, err := cedar.Replay(ctx, log, p, cedar.Language{Server: *server})
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	for _, m := range mismatches {
		fmt.Fprintln(stdout, m)
	}
	if len(mismatches) > 0 {
		return fmt.Errorf("%w: %d of %d Cedar evaluations differ", errFailed, len(mismatches), n)
	}
	fmt.Fprintf(stdout, "%d Cedar evaluations replayed, all the same\n", n)
	return nil
}
