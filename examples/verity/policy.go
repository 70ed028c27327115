package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/pin"
)

const policyUsage = `usage: verity policy check POLICY [-pins pins.json [-server NAME]] [-tools FILE | [-timeout 30s] -- UPSTREAM COMMAND...]
       verity policy check -config gateway.json [-timeout 30s]
       verity policy test  POLICY CASES

check   loads the tool gate's policy file (every problem at once, with its path) and
        lints it against the tools an upstream MCP server offers: rules that match no
        tool, rules shadowed by an earlier rule, approvers for tiers no rule needs,
        labels that no flow reads or no rule attaches, rate windows that never count,
        and the tools no rule matches. The tools come from -tools FILE (a tools/list
        result, or a JSON-RPC response holding one) or from the server started with
        UPSTREAM COMMAND, spoken to over stdio (initialize, then tools/list, every page).
        With -pins, each tool's definition is compared with the lock file (verity pin):
        a tool changed, new, or pinned and not listed is a problem.
        With -config, the gateway file (verity-mcp -config) is read and its policy
        linted against every server's tools/list, the tools named as the gateway's
        clients see them (server__tool), a rule's "server" matching the server: a
        command started with the environment the gateway gives it, a streamable
        HTTP server reached with the file's ca_file and a "header" auth secret. A
        server that cannot be listed (down, a secret missing, an auth kind that
        needs a token the check has none of) is named, and the check exits 2.
        Each server's pins lock file, when it names one, is compared as with -pins.
test    runs each case of CASES (a JSON file: {"cases": [...]}) against the policy: a
        case without steps is one call, decided by the policy's decision core, its
        verdict, rule, condition, reason and explanation compared with the case's; a
        case with steps is a scenario — calls, answers, time passing, expiry, results,
        restarts — played on a gate over a memory log with a fake clock, each step's
        decision, outcome and log entries compared with its expectations. A failing
        step is named with what differed. The format: REFERENCE.md, "verity policy
        test: cases and scenarios".

exit: 0 the policy is clean (check) or every case passed (test);
      1 check found problems in the policy, or a case failed;
      2 the check or test could not run: a usage error, or an input that cannot be
        used — a POLICY, CASES or -tools file that is missing, unreadable, not a
        regular file, too large or invalid, or an upstream that does not list its tools
`

// cmdPolicy is "verity policy check|test". Its exit codes are policy's
// own rule (policyUsage): 1 only for what the policy or its cases got
// wrong (errPolicyFindings), 2 for anything that kept the check or test
// from running — as verity-mcp and beliefserver exit 2 for a policy or a
// file they cannot use.
func cmdPolicy(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("policy needs a subcommand: check or test\n\n%s", policyUsage)
	}
	var err error
	switch args[0] {
	case "check":
		err = policyCheck(ctx, e, args[1:])
	case "test":
		err = policyTest(ctx, e, args[1:])
	case "-h", "--help", "help":
		fmt.Fprint(e.stdout, policyUsage)
		return nil
	default:
		return usagef("unknown policy subcommand %q\n\n%s", args[0], policyUsage)
	}
	var ue *usageError
	if err == nil || errors.Is(err, errPolicyFindings) || errors.As(err, &ue) {
		return err
	}
	return &inputError{err}
}

// errPolicyFindings is returned when check found problems or a test case
// failed: they are on stdout already (exit 1).
var errPolicyFindings = errors.New("the policy has problems (listed above)")

// loadPolicyConfig loads and compiles the policy file at p, and returns
// the labels it declares.
func loadPolicyConfig(p string) (toolgate.Policy, *toolgate.Compiled, error) {
	cfg, compiled, _, err := loadPolicy(p)
	return cfg, compiled, err
}

// loadPolicy returns the policy at p as written (approvers nil when the
// file names none), its compiled form and the labels it declares.
func loadPolicy(p string) (toolgate.Policy, *toolgate.Compiled, []string, error) {
	pol, err := toolgate.LoadPolicy(p)
	if err != nil {
		return toolgate.Policy{}, nil, nil, err
	}
	compiled, err := pol.Compile()
	if err != nil {
		return toolgate.Policy{}, nil, nil, err
	}
	return pol, compiled, pol.Labels, nil
}

func policyCheck(ctx context.Context, e *env, args []string) error {
	if isGatewayCheck(args) {
		return policyCheckGateway(ctx, e, args)
	}
	var upstream []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, upstream = args[:i], args[i+1:]
		if len(upstream) == 0 {
			return usagef("policy check: -- needs the upstream server's command")
		}
	}
	fs := flag.NewFlagSet("policy check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	toolsFile := fs.String("tools", "", "a tools/list result (JSON)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long the upstream server may take to list its tools")
	pinsFile := fs.String("pins", "", "a lock file (pins.json) to compare the tools' definitions with")
	pinServerName := fs.String("server", "", "the server's name in the -pins lock file")
	policyFile, err := parseInterspersed(fs, args, 1)
	if err != nil {
		return err
	}
	switch {
	case *toolsFile != "" && upstream != nil:
		return usagef("policy check: give -tools FILE or -- UPSTREAM COMMAND, not both")
	case *toolsFile == "" && upstream == nil:
		return usagef("policy check: give -tools FILE or -- UPSTREAM COMMAND")
	case *timeout <= 0:
		return usagef("policy check: -timeout must be positive")
	}
	cfg, compiled, declared, err := loadPolicy(policyFile[0])
	if err != nil {
		return err
	}
	var lock *pin.Lock
	if *pinsFile != "" {
		l, err := readLock(*pinsFile)
		if err != nil {
			return err
		}
		lock = &l
	}
	var tools []string
	var listed upstreamListing
	if *toolsFile != "" {
		data, err := readInput(*toolsFile, maxToolsListSize)
		if err != nil {
			return err
		}
		tools, err = parseToolsList(data)
		if err != nil {
			return fmt.Errorf("%s: %w", *toolsFile, err)
		}
		listed = upstreamListing{names: tools, pages: []json.RawMessage{toolsResult(data)}, file: true}
	} else {
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		listed, err = listUpstream(ctx, upstream, e.stderr)
		if err != nil {
			return fmt.Errorf("upstream %s: %w", upstream[0], err)
		}
		tools = listed.names
	}
	findings, notes := lintPolicy(cfg, compiled, declared, tools)
	if lock != nil {
		drift, err := pinFindings(*lock, *pinsFile, *pinServerName, listed)
		if err != nil {
			return err
		}
		findings = append(findings, drift...)
	}
	fmt.Fprintf(e.stdout, "%s: %d rules, %d tools upstream\n", policyFile[0], len(cfg.Tools), len(tools))
	for _, f := range findings {
		fmt.Fprintf(e.stdout, "  %s\n", f)
	}
	for _, n := range notes {
		fmt.Fprintf(e.stdout, "  note: %s\n", n)
	}
	if len(findings) > 0 {
		return errPolicyFindings
	}
	fmt.Fprintln(e.stdout, "  ok")
	return nil
}

// parseInterspersed parses fs's flags wherever they are among args and
// returns the n positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string, n int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != n {
		return nil, usagef("%s: want %d file argument(s), got %d", fs.Name(), n, len(pos))
	}
	return pos, nil
}

// toolsResult is the tools/list result of a file holding one, bare or
// inside a JSON-RPC response.
func toolsResult(data []byte) json.RawMessage {
	var rpc struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(data, &rpc) == nil && rpc.Result != nil {
		return rpc.Result
	}
	return data
}

// pinFindings compares a listing's definitions with the lock file's
// pins: a finding for each tool changed, new, or pinned and not listed,
// and for changed instructions (of an upstream: a tools file has none).
func pinFindings(lock pin.Lock, pinsFile, server string, u upstreamListing) ([]string, error) {
	l := pin.Listing{Server: server}
	if l.Server == "" {
		l.Server = u.server
	}
	for i, page := range u.pages {
		ts, err := pin.ParseTools(page)
		if err != nil {
			return nil, fmt.Errorf("tools/list page %d: %w", i+1, err)
		}
		l.Tools = append(l.Tools, ts...)
	}
	sl, err := lockServer(lock, pinsFile, &l, server != "")
	if err != nil {
		return nil, err
	}
	if u.file {
		l.Instructions = sl.Instructions // a tools file says nothing of instructions
	} else {
		l.Instructions = pin.HashInstructions(u.instructions, u.hasInstr)
	}
	state, _ := pin.State{}.LockLoaded(lock)
	_, out := state.Listed(l)
	var findings []string
	for _, d := range out.Drift {
		findings = append(findings, "pins: "+describeDrift(d))
	}
	return findings, nil
}

// parseToolsList reads the tool names of a tools/list result, bare
// ({"tools": [...]}) or inside a JSON-RPC response ({"result": {...}}).
func parseToolsList(data []byte) ([]string, error) {
	var doc struct {
		Tools  []struct{ Name string } `json:"tools"`
		Result *struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a tools/list result: %w", err)
	}
	list := doc.Tools
	if doc.Result != nil {
		list = doc.Result.Tools
	}
	if list == nil {
		return nil, errors.New(`not a tools/list result: no "tools" array`)
	}
	var names []string
	for i, t := range list {
		if t.Name == "" {
			return nil, fmt.Errorf("tools[%d] has no name", i)
		}
		names = append(names, t.Name)
	}
	return names, nil
}

// ruleName names rule i in findings: #i and its name.
func ruleName(cfg toolgate.Policy, i int) string {
	if n := cfg.Tools[i].Name; n != "" {
		return fmt.Sprintf("rule #%d %q (%s)", i, n, cfg.Tools[i].Match)
	}
	return fmt.Sprintf("rule #%d (%s)", i, cfg.Tools[i].Match)
}

// matchesName reports whether rule r's match (a tool name or a
// path.Match pattern, as the gate reads it) names tool.
func matchesName(r toolgate.Rule, tool string) bool {
	if r.Match == tool {
		return true
	}
	ok, err := path.Match(r.Match, tool)
	return err == nil && ok
}

// lintPolicy returns the problems of cfg (compiled, with the labels the
// file declares) against the upstream's tools, in rule order, and the
// tools no rule matches. Which tools a rule decides for, and which an
// earlier unconditional rule takes from it, is compiled.Coverage's
// answer.
func lintPolicy(cfg toolgate.Policy, compiled *toolgate.Compiled, declared, tools []string) (findings, notes []string) {
	return lintPolicyOn(cfg, compiled, declared, tools, nil)
}

// lintPolicyOn is lintPolicy for a gateway's tools, each on the server
// serverOf names (nil: one upstream, no named server): a rule with a
// server pattern decides only for the tools of the servers it matches.
func lintPolicyOn(cfg toolgate.Policy, compiled *toolgate.Compiled, declared, tools []string, serverOf map[string]string) (findings, notes []string) {
	coverage := compiled.Coverage(tools)
	attached, read := map[string][]int{}, map[string][]int{}
	tiers := map[claims.RiskTier]bool{}
	needs := func(t claims.RiskTier) {
		if t == claims.TierDelete || t == claims.TierPrivilege {
			tiers[t] = true
		}
	}
	for i, r := range cfg.Tools {
		cov := onServers(r, coverage[i], serverOf)
		open := cov.Tools
		matched := slices.Concat(cov.Tools, sortedKeys(cov.Shadowed))
		live := len(open) > 0
		switch {
		case len(matched) == 0 && r.Server != "" && serverOf == nil:
			findings = append(findings, fmt.Sprintf("%s names server %q: it applies only to a gateway's calls (check it with -config)", ruleName(cfg, i), r.Server))
		case len(matched) == 0:
			findings = append(findings, fmt.Sprintf("%s matches no tool the upstream lists", ruleName(cfg, i)))
		case !live:
			var by []string
			for _, t := range sortedKeys(cov.Shadowed) {
				by = append(by, fmt.Sprintf("%s (%s)", t, cov.Shadowed[t]))
			}
			findings = append(findings, fmt.Sprintf("%s is shadowed: earlier rules take every call of %s", ruleName(cfg, i), strings.Join(by, ", ")))
		}
		if !live {
			if r.Rate != nil {
				findings = append(findings, fmt.Sprintf("%s: its rate window (%d per %s) never counts a call", ruleName(cfg, i), r.Rate.Calls, r.Rate.Per))
			}
			continue
		}
		if r.Effect == toolgate.EffectRefuse {
			continue
		}
		needs(r.Tier)
		for _, l := range r.Labels {
			attached[l] = append(attached[l], i)
		}
		for _, f := range r.Flow {
			if f.Ask {
				needs(f.Tier)
				if f.Tier == "" {
					needs(claims.TierPrivilege)
				}
			}
			for _, l := range f.After {
				read[l] = append(read[l], i)
			}
		}
	}
	var def toolgate.Rule
	if cfg.DefaultRule != nil {
		def = *cfg.DefaultRule
	}
	if cfg.AllowUnknown {
		needs(def.Tier)
		for _, l := range def.Labels {
			attached[l] = append(attached[l], -1)
		}
	}
	for _, l := range sortedKeys(attached) {
		if _, ok := read[l]; !ok {
			notes = append(notes, fmt.Sprintf("label %q is attached (%s) but no flow reads it: it is only recorded", l, rulesList(attached[l])))
		}
	}
	for _, l := range sortedKeys(read) {
		if _, ok := attached[l]; !ok {
			findings = append(findings, fmt.Sprintf("label %q is read by a flow (%s) but no rule that matches an upstream tool attaches it", l, rulesList(read[l])))
		}
	}
	for _, l := range declared {
		_, a := attached[l]
		_, r := read[l]
		if !a && !r && !slices.Contains(def.Labels, l) {
			findings = append(findings, fmt.Sprintf("label %q is declared but no rule that matches an upstream tool attaches it and no flow reads it", l))
		}
	}
	for _, t := range []claims.RiskTier{claims.TierDelete, claims.TierPrivilege} {
		// Approvers of a policy whose flows read labels may also clear
		// them (toolgate.Gate.Declassify): they are not idle.
		if names := cfg.Approvers[t]; len(names) > 0 && !tiers[t] && len(read) == 0 {
			findings = append(findings, fmt.Sprintf("approvers for %s (%s) approve nothing: no rule that matches an upstream tool needs %s", t, strings.Join(names, ", "), t))
		}
	}
	var unmatched []string
	for _, t := range tools {
		if !slices.ContainsFunc(cfg.Tools, func(r toolgate.Rule) bool { return matchesName(r, t) && serverMatches(r, serverOf[t]) }) {
			unmatched = append(unmatched, t)
		}
	}
	if len(unmatched) > 0 {
		what := "refused as unknown tools"
		if cfg.AllowUnknown {
			what = "run under the default rule"
		}
		notes = append(notes, fmt.Sprintf("no rule matches %s (%s)", strings.Join(unmatched, ", "), what))
	}
	return findings, notes
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func rulesList(idx []int) string {
	var parts []string
	for _, i := range idx {
		if i < 0 {
			parts = append(parts, "default rule")
			continue
		}
		parts = append(parts, "rule #"+strconv.Itoa(i))
	}
	return strings.Join(parts, ", ")
}
