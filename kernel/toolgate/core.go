package toolgate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/violation"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/kernel/value"
)

// The decision core: which rule applies to a call, and what it decides —
// a pure function of the compiled rules, what the caller's session has
// seen (a Snapshot), the call and its time. Gate is the shell around it:
// it locks, asks the humans, drives the kernel session and appends to the
// log. A host with its own concurrency model can run the core directly
// (Compiled.Decide) and the kernel itself.

// Compiled is a gate's rules made ready to decide: argument schemas
// compiled, path roots cleaned, names resolved. It is immutable and safe
// for concurrent use. Policy.Compile makes one; New takes it, and the
// linter's questions (Match, Coverage) are asked of it.
type Compiled struct {
	cfg          Policy // normalized and validated: what the gate reads besides the rules
	invariants   []kernel.Invariant
	rules        []compiledRule
	def          *compiledRule // the default rule, when unknown tools are allowed
	allowUnknown bool
	conditions   bool          // some rule has a when condition (condition.go)
	period       *budgetPeriod // Policy.BudgetPeriod, nil when the budget does not renew
	sharedPeriod *budgetPeriod // Policy.Shared.Period
}

type compiledRule struct {
	Rule
	index   int    // in Policy.Tools; -1 for the default rule
	id      string // Name, or "#index"
	literal bool   // Match has no pattern characters
	// serverLiteral: Server has no pattern characters.
	serverLiteral bool
	schema        *jsonschema.Schema
	paths         []compiledPath
	when          *compiledWhen // the rule's when condition (condition.go)
	tags          []string      // "rule:<id>" and the labels' "label:<name>", on every execution
	// window and windowTag are the rate window's id and tag when they do
	// not depend on the tool (scope rule, or a literal match).
	window, windowTag string
	// effects are an execution's effects (the counters "calls" and
	// "calls/"+tool) when they do not depend on the call: a literal match.
	// The kernel copies an action's effects, so every call shares them.
	effects []kernel.Effect
}

// callEffects returns the effects of an execution of tool: "calls" and
// "calls/"+tool counted by one.
func callEffects(tool string) []kernel.Effect {
	return []kernel.Effect{
		kernel.Count("calls", value.Int(1), value.Int(0)),
		kernel.Count("calls/"+tool, value.Int(1), value.Int(0)),
	}
}

type compiledPath struct {
	tokens []string // the argument's JSON Pointer, unescaped
	cond   PathCondition
}

// RuleRef names a rule in a decision: its index in Policy.Tools (the
// policy file's tools), -1 for the default rule, and its name if it has
// one. The zero RuleRef with Found false means no rule applied.
type RuleRef struct {
	Found bool
	Index int
	Name  string
}

// String returns `rule #2 "name"`, `rule #2`, "default rule" or "no rule".
func (r RuleRef) String() string {
	switch {
	case !r.Found:
		return "no rule"
	case r.Index < 0:
		return "default rule"
	case r.Name != "":
		return "rule #" + strconv.Itoa(r.Index) + " " + strconv.Quote(r.Name)
	}
	return "rule #" + strconv.Itoa(r.Index)
}

// defaultRuleID is the default rule's id in window keys, tags and log
// entries; no rule of the policy may take it as its name, so that no two
// rules share a window.
const defaultRuleID = "default"

// id returns the rule's id in window keys and tags: its name, "#i", or
// defaultRuleID.
func (r RuleRef) id() string {
	switch {
	case r.Name != "":
		return r.Name
	case r.Index < 0:
		return defaultRuleID
	}
	return "#" + strconv.Itoa(r.Index)
}

// Snapshot is what the core knows of one caller's session: the labels
// its allowed calls carried, and the recorded times (ascending) of its
// calls in each rate window, by window id. The core only reads it.
//
// Spent and Remaining are the caller's budget spent (net of refunds) and
// left: only a rule's when condition reads them, and a gate fills them
// only when the policy has one.
type Snapshot struct {
	Labels           map[string]bool
	Windows          map[string][]time.Time
	Spent, Remaining kernel.Cost
}

// Window is a rate window a call counts in once it runs: its id (see
// Rule.Rate), length and limit.
type Window struct {
	ID    string
	Per   time.Duration
	Limit int

	tag string // "window:"+ID, when made once
}

// Ruling is what the decision core says of a call.
type Ruling struct {
	// Verdict: Allow (go on to the kernel's checks), Refuse, or
	// AskApproval (a human must approve at Tier first).
	Verdict Verdict
	// Rule is the rule that decided; Condition the part of it that did.
	Rule      RuleRef
	Condition string
	// Reason is the refusal's code on the log (unknown_tool, no_rule,
	// refused, arguments, unsafe_path, flow, rate, cost); Explanation
	// the one line that says why, or what the human is asked.
	Reason      string
	Explanation string
	// Tier is the risk tier of the call (an approval's tier).
	Tier claims.RiskTier
	// Cost is what the call is charged (its upper bound with Reserve).
	Cost kernel.Cost
	// Windows are the rate windows the call counts in when it runs;
	// Labels what it attaches to the session.
	Windows []Window
	Labels  []string
	// When is what the rules' when conditions saw and answered (nil when
	// none was evaluated): the gate records it with the decision.
	When *gatelog.When

	rule *compiledRule
}

// compile checks p and, when nothing is wrong, compiles it. Each
// argument schema is compiled once, here: one that does not compile is a
// violation (argument_schema) among the others.
func (p Policy) compile() (*Compiled, []Violation) {
	vs := p.violations(nil)
	n := p.normalized()
	out := &Compiled{cfg: n, allowUnknown: n.AllowUnknown, rules: make([]compiledRule, len(n.Tools))}
	for i := range n.Tools {
		at := violation.Index("/tools", i)
		cr, err := compileRule(n.Tools[i], i)
		if err != nil {
			vs = append(vs, Violation{Path: at + "/arguments", Rule: policyRuleArgSchema, Message: err.Error()})
		}
		out.rules[i] = cr
	}
	vs = append(vs, n.compileConditions(out)...)
	if n.AllowUnknown && n.DefaultRule != nil {
		cr, _ := compileRule(*n.DefaultRule, -1) // no schema: violations refuses one on the default rule
		out.def = &cr
	}
	if len(vs) > 0 {
		violation.Sort(vs)
		return nil, vs
	}
	out.invariants = n.invariants()
	out.period, out.sharedPeriod = n.compiledPeriods()
	return out, nil
}

// compileRule compiles rule i of Policy.Tools (-1 for the default rule),
// whose other members violations has checked; its error is its argument
// schema's.
func compileRule(r Rule, i int) (compiledRule, error) {
	ref := RuleRef{Found: true, Index: i, Name: r.Name}
	cr := compiledRule{Rule: r, index: i, id: ref.id(), literal: !strings.ContainsAny(r.Match, `*?[\`),
		serverLiteral: !strings.ContainsAny(r.Server, `*?[\`)}
	cr.Tier = tierOrDefault(r.Tier)
	var schemaErr error
	switch {
	case len(r.Arguments) == 0:
	case r.schema != nil && bytes.Equal(r.schema.raw, r.Arguments): // compiled by ParsePolicy
		cr.schema = r.schema.s
	default:
		cr.schema, schemaErr = compileArgumentSchema(r.Arguments)
	}
	for _, pc := range r.Paths {
		tokens, err := pointerTokens(pc.Argument)
		if err != nil {
			continue // violations reports it
		}
		cp := compiledPath{tokens: tokens, cond: PathCondition{Argument: pc.Argument, CaseInsensitive: pc.CaseInsensitive}}
		for _, root := range pc.Under {
			cp.cond.Under = append(cp.cond.Under, path.Clean(root))
		}
		cr.paths = append(cr.paths, cp)
	}
	cr.tags = append(cr.tags, "rule:"+cr.id)
	for _, l := range r.Labels {
		cr.tags = append(cr.tags, "label:"+l)
	}
	if r.LabelTTL > 0 && len(r.Labels) > 0 {
		cr.tags = append(cr.tags, labelTTLTagPrefix+r.LabelTTL.String())
	}
	cr.Labels = slices.Clone(r.Labels)
	if r.Rate != nil && (r.Rate.Scope == RateScopeRule || cr.literal && i >= 0) {
		cr.windowTag = windowTag(&cr, r.Match)
		cr.window = cr.windowTag[len(windowTagPrefix):]
	}
	if cr.literal && i >= 0 {
		cr.effects = callEffects(r.Match)
	}
	return cr, schemaErr
}

// argumentSchemaURL is the URL an argument schema is compiled under; a
// schema may refer only to itself.
const argumentSchemaURL = "urn:verity:toolgate:arguments"

// compileArgumentSchema compiles a rule's argument schema (draft 2020-12
// unless it names another with $schema), refusing references to other
// documents and any panic of the compiler.
func compileArgumentSchema(raw json.RawMessage) (s *jsonschema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("the schema does not compile: %v", r)
		}
	}()
	if _, err := canon.Decode(raw); err != nil {
		return nil, fmt.Errorf("not a JSON value: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("an argument schema refers only to itself, not to %s", u)
	}
	if err := c.AddResource(argumentSchemaURL, bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("the schema does not compile: %v", oneLineErr(err))
	}
	s, err = c.Compile(argumentSchemaURL)
	if err != nil {
		return nil, fmt.Errorf("the schema does not compile: %v", oneLineErr(err))
	}
	return s, nil
}

func oneLineErr(err error) string { return OneLine(err.Error()) }

// pointerTokens splits an RFC 6901 JSON Pointer into its unescaped
// reference tokens.
func pointerTokens(p string) ([]string, error) {
	if p == "" {
		return nil, errors.New("the argument's pointer is empty: a path is a member of the arguments, such as \"/path\"")
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("%q is not a JSON Pointer (it starts with \"/\")", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, t := range parts {
		if badTilde.MatchString(t) {
			return nil, fmt.Errorf("%q is not a JSON Pointer: \"~\" is followed by 0 or 1", p)
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

var badTilde = regexp.MustCompile(`~([^01]|$)`)

// lookup returns the value at tokens in v.
func lookup(v any, tokens []string) (any, bool) {
	for _, t := range tokens {
		switch x := v.(type) {
		case map[string]any:
			n, ok := x[t]
			if !ok {
				return nil, false
			}
			v = n
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) || (len(t) > 1 && t[0] == '0') || t[0] == '+' {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// matchesTool reports whether the rule's match covers tool.
func (r *compiledRule) matchesTool(tool string) bool {
	if r.literal {
		return r.Match == tool
	}
	return r.matches(tool)
}

// conditional reports whether the rule looks at more than the tool's
// name.
func (r *compiledRule) conditional() bool {
	return r.Principals != nil || r.schema != nil || len(r.paths) > 0 || r.when != nil || r.Server != ""
}

// matchesServer reports whether the rule's server pattern covers server,
// the server a call is on; a call on no named server matches none.
func (r *compiledRule) matchesServer(server string) bool {
	if server == "" {
		return false
	}
	if r.serverLiteral {
		return r.Server == server
	}
	ok, err := path.Match(r.Server, server)
	return err == nil && ok
}

func (r *compiledRule) ref() RuleRef { return RuleRef{Found: true, Index: r.index, Name: r.Name} }

// args is a call's arguments decoded once, on first need.
type args struct {
	raw     []byte
	decoded bool
	v       any
	err     error
	paths   []normalized   // the paths normalised so far
	index   map[string]int // into paths, once there are many
	when    *whenState     // the when conditions' input and answers; nil when the policy has none
}

// normalized is a path and what normalizePath made of it.
type normalized struct {
	path  string
	forms []string
	err   error
}

// normalize is normalizePath, once per path of a call.
func (a *args) normalize(p string) ([]string, error) {
	if a.index != nil {
		if i, ok := a.index[p]; ok {
			return a.paths[i].forms, a.paths[i].err
		}
	} else {
		for _, n := range a.paths {
			if n.path == p {
				return n.forms, n.err
			}
		}
	}
	forms, err := normalizePath(p)
	a.paths = append(a.paths, normalized{p, forms, err})
	if len(a.paths) > 8 { // an array of many paths: look them up by name
		if a.index == nil {
			a.index = make(map[string]int, 2*len(a.paths))
			for i, n := range a.paths {
				a.index[n.path] = i
			}
		}
		a.index[p] = len(a.paths) - 1
	}
	return forms, err
}

// value decodes the arguments once: one strict JSON value (canon.Decode:
// no duplicate member, valid UTF-8, no integer a double would round) in
// which no object has two member names equal under Unicode case folding,
// read in one pass (readArguments).
func (a *args) value() (any, error) {
	if !a.decoded {
		a.decoded = true
		if len(a.raw) == 0 {
			a.v = map[string]any{}
		} else {
			a.v, a.err = readArguments(a.raw)
		}
	}
	return a.v, a.err
}

// fit is how a rule stands to a call.
type fit uint8

const (
	fitOther   fit = iota // the rule's match does not cover the tool
	fitMiss               // it matches the tool, but a condition does not hold
	fitApplies            // the rule applies
	fitRefuses            // the call must be refused at this rule
)

// fit reports whether rule r applies to the call, or, with fitRefuses,
// that the call must be refused at r (its arguments cannot be read one
// way, or a path is unsafe: such a call never falls through to a later
// rule), with the condition and why. With explain, a fitMiss names the
// condition that does not hold and why; without it, a miss costs no
// words.
func (r *compiledRule) fit(c *Call, a *args, explain bool) (f fit, condition, why string) {
	if !r.matchesTool(c.Tool) {
		return fitOther, "", ""
	}
	if r.Server != "" && !r.matchesServer(c.Server) {
		if explain {
			if c.Server == "" {
				return fitMiss, "server", "the call is on no named server"
			}
			return fitMiss, "server", fmt.Sprintf("server %q is not %q", c.Server, r.Server)
		}
		return fitMiss, "", ""
	}
	if r.Principals != nil && !r.Principals.admits(c.Principal) {
		if explain {
			return fitMiss, "principals", "the principal is not admitted"
		}
		return fitMiss, "", ""
	}
	if r.when != nil {
		if f, condition, why := r.whenFit(c, a, explain); f != fitApplies {
			return f, condition, why
		}
	}
	if r.schema == nil && len(r.paths) == 0 {
		return fitApplies, "", ""
	}
	v, err := a.value()
	if err != nil {
		return fitRefuses, gatelog.ConditionArguments, fmt.Sprintf("the arguments are not one JSON value every reader reads the same way: %v", strings.TrimPrefix(err.Error(), "canon: "))
	}
	if r.schema != nil {
		if err := validateArguments(r.schema, v); err != nil {
			if explain {
				return fitMiss, "arguments", schemaMiss(err)
			}
			return fitMiss, "", ""
		}
	}
	for k, p := range r.paths {
		x, found := lookup(v, p.tokens)
		var f fit
		switch x := x.(type) {
		case string:
			f, why = r.pathFits(p, x, a, explain)
		case []any:
			f, why = r.pathsFit(p, x, a, explain)
		default:
			f = fitMiss
			if explain {
				why = "argument " + p.cond.Argument + " is absent"
				if found {
					why = "argument " + p.cond.Argument + " is not a string or an array of strings"
				}
			}
		}
		switch {
		case f == fitRefuses || f == fitMiss && explain:
			return f, "paths/" + strconv.Itoa(k), why
		case f == fitMiss:
			return fitMiss, "", ""
		}
	}
	return fitApplies, "", ""
}

// pathFits decides path condition p for the string s.
func (r *compiledRule) pathFits(p compiledPath, s string, a *args, explain bool) (fit, string) {
	forms, err := a.normalize(s)
	switch verdict, why := p.cond.check(s, forms, err); verdict {
	case pathUnsafe:
		return fitRefuses, "argument " + p.cond.Argument + ": " + why
	case pathOutside:
		if explain {
			return fitMiss, quotePath(s) + " is not under " + strings.Join(p.cond.Under, " or ")
		}
		return fitMiss, ""
	}
	return fitApplies, ""
}

// pathsFit decides path condition p for an array of paths (see
// PathCondition): every element is a string the gate can read one way,
// or the call is refused at the rule, and so is an empty array; an
// allowing rule's condition holds when every path is under a root, a
// refusing rule's when any is, so that no path escapes either by
// keeping company.
func (r *compiledRule) pathsFit(p compiledPath, xs []any, a *args, explain bool) (fit, string) {
	if len(xs) == 0 {
		return fitRefuses, "argument " + p.cond.Argument + " is an empty array: it names no path the gate can check"
	}
	inside, outside := 0, -1
	for i, x := range xs {
		s, ok := x.(string)
		if !ok {
			return fitRefuses, "argument " + p.cond.Argument + "/" + strconv.Itoa(i) + " is not a string"
		}
		forms, err := a.normalize(s)
		switch verdict, why := p.cond.check(s, forms, err); verdict {
		case pathUnsafe:
			return fitRefuses, "argument " + p.cond.Argument + "/" + strconv.Itoa(i) + ": " + why
		case pathInside:
			inside++
		case pathOutside:
			if outside < 0 {
				outside = i
			}
		}
	}
	switch {
	case r.Effect == EffectRefuse && inside > 0, r.Effect != EffectRefuse && outside < 0:
		return fitApplies, ""
	case !explain:
		return fitMiss, ""
	case r.Effect == EffectRefuse:
		return fitMiss, "no path of " + p.cond.Argument + " is under " + strings.Join(p.cond.Under, " or ")
	}
	return fitMiss, quotePath(xs[outside].(string)) + " (" + p.cond.Argument + "/" + strconv.Itoa(outside) + ") is not under " + strings.Join(p.cond.Under, " or ")
}

// schemaMiss words why arguments fail a rule's schema: the first
// failing keyword, and where in the arguments.
func schemaMiss(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	if ve.InstanceLocation == "" {
		return ve.Message
	}
	return ve.InstanceLocation + ": " + ve.Message
}

// maxMisses is how many rules a refusal of a call no rule admits names.
const maxMisses = 4

// misses words, for a call no rule applies to, each rule that matches
// its tool and the condition that does not hold for it (at most
// maxMisses of them): the rules that would have allowed the call, or,
// when only refusing rules match the tool, those; "" when no rule
// matches the tool.
func (c *Compiled) misses(call *Call, a *args) string {
	var b strings.Builder
	n := 0
	for _, refusing := range []bool{false, true} {
		for i := range c.rules {
			r := &c.rules[i]
			if (r.Effect == EffectRefuse) != refusing {
				continue
			}
			f, cond, why := r.fit(call, a, true)
			if f != fitMiss {
				continue
			}
			if n++; n > maxMisses {
				continue
			}
			if n > 1 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s (%s: %s)", r.ref(), cond, why)
		}
		if n > 0 {
			break
		}
	}
	if n > maxMisses {
		fmt.Fprintf(&b, "; and %d more", n-maxMisses)
	}
	return b.String()
}

// validateArguments runs a compiled schema, a panic of the validator
// counting as a failure.
func validateArguments(s *jsonschema.Schema, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the argument schema failed: %v", r)
		}
	}()
	return s.Validate(v)
}

// Match returns the rule c would decide a call of tool by p with
// arguments by, looking at the rule's match, principals, when condition
// (for a caller with no labels and nothing spent), argument schema and
// paths only (not windows or labels), for a call on no named server (a
// rule naming one never applies: see Rule.Server); a RuleRef with Found false when no rule
// applies (and unknown tools are refused). Condition is non-empty when
// the call would be refused at that rule for what its arguments are
// (gatelog.ConditionArguments, "paths/k").
func (c *Compiled) Match(tool string, p Principal, arguments []byte) (ref RuleRef, condition string) {
	call := Call{Tool: tool, Principal: p, Arguments: arguments}
	a := args{raw: arguments}
	if c.conditions {
		a.when = &whenState{}
	}
	r, condition, _ := c.find(&call, &a)
	if r == nil {
		return RuleRef{}, ""
	}
	return r.ref(), condition
}

// find returns the rule that applies to c, or the rule at which it must
// be refused (condition and why set), or nil.
func (c *Compiled) find(call *Call, a *args) (r *compiledRule, condition, why string) {
	for i := range c.rules {
		r := &c.rules[i]
		switch f, cond, why := r.fit(call, a, false); f {
		case fitRefuses:
			return r, cond, why
		case fitApplies:
			return r, "", ""
		}
	}
	if c.allowUnknown {
		return c.def, "", ""
	}
	return nil, "", ""
}

// Decide is the decision core: what the rules say about call, made at
// time at by a caller whose session is s. It reads nothing else and
// changes nothing: the same inputs give the same Ruling. In order: the
// first rule that applies (its match, principals, when condition,
// argument schema and paths; arguments that cannot be read one way, an
// unsafe path, or a when condition that forbids the call or fails refuse
// the call at that rule; none: gatelog.ConditionUnknownTool when no rule matches
// the tool, else gatelog.ConditionNoRule naming the rules that matched and why
// each did not apply); a refusing rule; the rule's flow against the
// labels seen; its rate window (the calls after at-Per: those in
// (at-Per, at], and later ones when the clock stepped back); its price;
// its tier (or the flow's) needing a human.
func (c *Compiled) Decide(s Snapshot, call Call, at time.Time) Ruling {
	a := args{raw: call.Arguments}
	if c.conditions {
		a.when = &whenState{labels: s.Labels, spent: s.Spent, remaining: s.Remaining}
	}
	r, condition, why := c.find(&call, &a)
	if r == nil {
		if misses := c.misses(&call, &a); misses != "" {
			return Ruling{Verdict: Refuse, Condition: gatelog.ConditionNoRule, Reason: "no_rule",
				Explanation: OneLine(fmt.Sprintf("tool %q: no rule admits the call: %s", call.Tool, misses)), When: a.when.record()}
		}
		return Ruling{Verdict: Refuse, Condition: gatelog.ConditionUnknownTool, Reason: "unknown_tool",
			Explanation: fmt.Sprintf("tool %q is not in the gate's catalogue", call.Tool)}
	}
	out := Ruling{Verdict: Refuse, Rule: r.ref(), Tier: r.Tier, rule: r, When: a.when.record()}
	refuse := func(cond, reason, format string, args ...any) Ruling {
		out.Condition, out.Reason = cond, reason
		out.Explanation = OneLine(fmt.Sprintf("tool %q (%s, %s): ", call.Tool, out.Rule, cond) + fmt.Sprintf(format, args...))
		return out
	}
	if condition != "" {
		reason := "unsafe_path"
		switch condition {
		case gatelog.ConditionArguments:
			reason = "arguments"
		case gatelog.ConditionWhen:
			reason = "condition"
		}
		return refuse(condition, reason, "%s", why)
	}
	if r.Effect == EffectRefuse {
		if r.Reason != "" {
			return refuse(gatelog.ConditionEffect, "refused", "%s", r.Reason)
		}
		return refuse(gatelog.ConditionEffect, "refused", "the policy refuses this call")
	}
	tier := r.Tier
	if r.TierFromHints {
		tier = hintedTier(&call)
	}
	askCond, askWhy := "", ""
	for k, f := range r.Flow {
		if !allSeen(s.Labels, f.After) {
			continue
		}
		cond := "flow/" + strconv.Itoa(k)
		why := f.Reason
		if why == "" {
			why = "after " + strings.Join(f.After, " and ") + " in this session"
		}
		if !f.Ask {
			return refuse(cond, "flow", "%s", why)
		}
		if ft := tierOrPrivilege(f.Tier); tierRank(ft) > tierRank(tier) {
			tier = ft
		}
		askCond, askWhy = cond, why
		break
	}
	if rt := r.Rate; rt != nil {
		w := Window{ID: r.window, Per: rt.Per, Limit: rt.Calls, tag: r.windowTag}
		if w.ID == "" {
			w.tag = windowTag(r, call.Tool)
			w.ID = w.tag[len(windowTagPrefix):]
		}
		if n := countWithin(s.Windows[w.ID], at, rt.Per); n >= rt.Calls {
			return refuse(gatelog.ConditionRate, "rate", "%d calls in the last %s, at most %d", n, rt.Per, rt.Calls)
		}
		out.Windows = []Window{w}
	}
	cost, err := r.price(call)
	if err != nil {
		return refuse(gatelog.ConditionCost, "cost", "cannot price the call: %v", err)
	}
	out.Cost, out.Tier, out.Labels = cost, tier, r.Labels
	out.Verdict, out.Condition = Allow, gatelog.ConditionMatch
	if tier == claims.TierDelete || tier == claims.TierPrivilege {
		out.Verdict, out.Condition = AskApproval, gatelog.ConditionTier
		if askCond != "" {
			out.Condition = askCond
			out.Explanation = OneLine(askWhy)
		}
	}
	return out
}

// hintedTier is the tier a TierFromHints rule gives call: the hint of
// its pinned definition, DELETE when it has none (no pinned definition,
// or no valid tier), so that an unvouched call is asked about.
func hintedTier(call *Call) claims.RiskTier {
	if call.Definition == "" || call.HintedTier == "" || !call.HintedTier.Valid() {
		return claims.TierDelete
	}
	return call.HintedTier
}

// windowLengths maps the id of each rule with a rate to its window's
// length (ids are unique: no rule may take the default rule's).
func (c *Compiled) windowLengths() map[string]time.Duration {
	out := map[string]time.Duration{}
	for i := range c.rules {
		if r := &c.rules[i]; r.Rate != nil {
			out[r.id] = r.Rate.Per
		}
	}
	if c.def != nil && c.def.Rate != nil {
		out[c.def.id] = c.def.Rate.Per
	}
	return out
}

// windowTagPrefix starts a window's tag on an execution: the tag is the
// prefix and the window's id, made in one string with it.
const windowTagPrefix = "window:"

// windowTag returns the tag of the window a call of tool counts in under
// r: windowTagPrefix and the window's id, "rule:<id>" (scope rule) or
// "rule:<id>|tool:<tool>".
func windowTag(r *compiledRule, tool string) string {
	if r.Rate.Scope == RateScopeRule {
		return windowTagPrefix + "rule:" + r.id
	}
	return windowTagPrefix + "rule:" + r.id + "|tool:" + tool
}

// countWithin counts the times after at-per (times ascending): those in
// (at-per, at], and any recorded later than at when the clock stepped
// back, so that a window never holds more than its limit.
func countWithin(times []time.Time, at time.Time, per time.Duration) int {
	from := at.Add(-per)
	lo, _ := slices.BinarySearchFunc(times, from, func(t, from time.Time) int {
		if t.After(from) {
			return 1
		}
		return -1
	})
	return len(times) - lo
}

func allSeen(seen map[string]bool, labels []string) bool {
	for _, l := range labels {
		if !seen[l] {
			return false
		}
	}
	return len(labels) > 0
}

func tierOrPrivilege(t claims.RiskTier) claims.RiskTier {
	if t == "" {
		return claims.TierPrivilege
	}
	return t
}

// tierRank orders the risk tiers from READ_ONLY (0) to PRIVILEGE (4).
func tierRank(t claims.RiskTier) int {
	switch t {
	case claims.TierWriteLimited:
		return 1
	case claims.TierModify:
		return 2
	case claims.TierDelete:
		return 3
	case claims.TierPrivilege:
		return 4
	}
	return 0
}

// RuleCoverage is what a list of tools (an MCP server's tools/list, a
// framework's registry) leaves of one rule: a linter reports a rule
// whose Tools and Shadowed are both empty as matching no tool, and one
// with only Shadowed as never deciding.
type RuleCoverage struct {
	Rule RuleRef
	// Tools are the listed tools the rule may decide for: it matches them,
	// and no earlier rule that applies to every call of a tool (one
	// without principals, arguments or paths) matches them first.
	Tools []string
	// Shadowed maps each listed tool the rule matches but never decides
	// for to the earlier rule that always does.
	Shadowed map[string]RuleRef
}

// Coverage reports, for each rule in order, which of tools it may decide
// for and which an earlier rule takes from it. The default rule is not
// reported.
func (c *Compiled) Coverage(tools []string) []RuleCoverage {
	out := make([]RuleCoverage, len(c.rules))
	taken := make(map[string]*compiledRule, len(tools)) // a tool's first unconditional rule
	for i := range c.rules {
		r := &c.rules[i]
		out[i].Rule = r.ref()
		for _, tool := range tools {
			if !r.matchesTool(tool) {
				continue
			}
			if first, ok := taken[tool]; ok {
				if out[i].Shadowed == nil {
					out[i].Shadowed = map[string]RuleRef{}
				}
				out[i].Shadowed[tool] = first.ref()
				continue
			}
			out[i].Tools = append(out[i].Tools, tool)
		}
		if !r.conditional() {
			for _, tool := range out[i].Tools {
				taken[tool] = r
			}
		}
	}
	return out
}

// Policy returns the policy c enforces, its defaults applied (see
// Policy.Compile): the tier of each rule, the approvers, MaxWaiting,
// ResultTextLimit and the version filled in.
func (c *Compiled) Policy() Policy { return c.cfg.normalized() }
