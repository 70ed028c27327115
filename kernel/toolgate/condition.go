package toolgate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/osfile"
	"github.com/verity-go/verity/internal/violation"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// A rule's "when" condition is written in a language the gate does not
// hold itself — Cedar, in the nested module kernel/toolgate/cedar — and
// evaluated over one input, ConditionInput, whatever the language. The
// host registers the languages it supports on the Policy
// (Policy.Conditions) before Compile; Compile compiles each rule's text
// once with its language and refuses a rule whose language is not
// registered, naming the package that supplies it.
//
// What a condition decides is stateless: it sees the call and what the
// caller's session has recorded (labels, spend), and answers whether
// the rule applies, and may refuse the call at the rule. What it cannot
// express stays native and verifiable: the charge, the rate windows, the
// labels a call attaches, approvals.

// WhenCondition is a rule's "when" (version 2): {"language": "cedar",
// "text": "permit (principal, action, resource) when {…};"}, or
// {"language": "cedar", "file": "github.cedar"}. The rule applies to a
// call only when the condition says so (see ConditionAnswer).
type WhenCondition struct {
	// Language ("language", required) names the ConditionLanguage that
	// compiles the condition: one registered on Policy.Conditions.
	Language string
	// Text ("text") is the condition in that language; exactly one of
	// Text and File is given.
	Text string
	// File ("file") names a file that holds the condition, relative to
	// the policy file's directory. LoadPolicy reads it (Source); a policy
	// from ParsePolicy, which knows no directory, or built in Go with a
	// File, cannot be compiled.
	File string

	loaded *string // File's content, as LoadPolicy read it
}

// Source returns the condition's text: Text, or the content of File
// LoadPolicy read ("" when it was not read).
func (w WhenCondition) Source() string {
	if w.File != "" {
		if w.loaded == nil {
			return ""
		}
		return *w.loaded
	}
	return w.Text
}

// ConditionLanguage compiles the conditions written in one language. A
// package that supplies one (kernel/toolgate/cedar) exports a value the
// host puts on Policy.Conditions.
type ConditionLanguage interface {
	// Name is the language's name in a rule's "when" ("cedar").
	Name() string
	// Compile compiles a condition's text; at is the JSON Pointer of the
	// text in the policy ("/tools/2/when/text"), for the error to name.
	// The error says what is wrong and where in the text, in one line.
	Compile(at, text string) (CompiledCondition, error)
}

// CompiledCondition is a condition made ready to evaluate. It must be
// safe for concurrent use and a pure function of its input.
type CompiledCondition interface {
	// Evaluate answers for one call. An error refuses the call at the
	// rule (fail closed), its message the reason.
	Evaluate(in *ConditionInput) (ConditionAnswer, error)
}

// ConditionInput is what a condition sees of a call: the whole input,
// the same for every language, recorded with the decision (see
// Ruling.When, gatelog.When) so that a replay can evaluate it again.
type ConditionInput struct {
	// Principal is who the call is made for (Call.Principal).
	Principal Principal
	// Tool is the tool called (Call.Tool).
	Tool string
	// Arguments are the call's arguments as the gate read them: a tree
	// of map[string]any, []any, string, bool, nil and json.Number (no
	// number is rounded).
	Arguments any
	// Labels are the labels the caller's session has seen, sorted.
	Labels []string
	// Spent and Remaining are the caller's budget spent (net of refunds)
	// and left, when the call is decided.
	Spent, Remaining kernel.Cost
	// Definition is the pinned hash of the tool's definition the call is
	// decided against (Call.Definition), "" when the host pins none.
	Definition string
	// Server is the upstream server the call is on (Call.Server), "" when
	// the host names none: Cedar takes it as the request's resource.
	Server string

	raw []byte // the arguments as sent, when the gate made the input
}

// ConditionAnswer is a condition's answer for one call: the rule applies
// (Applies), the call is refused at the rule (Refuses: a Cedar forbid),
// or, with neither, the rule does not apply and the next rule is tried.
// Policies names what in the condition's text determined the answer (Cedar
// policy ids); a refusal's reason is the first of them.
type ConditionAnswer struct {
	Applies, Refuses bool
	Policies         []string
}

// compiledWhen is a rule's condition, compiled.
type compiledWhen struct {
	language string
	cond     CompiledCondition
	sha256   string // of the text
}

// compileWhen compiles the when condition of rule at (a JSON Pointer)
// with the language it names among langs.
func compileWhen(at string, w *WhenCondition, langs []ConditionLanguage) (*compiledWhen, *Violation) {
	if w.Language == "" || (w.Text == "") == (w.File == "") {
		return nil, nil // violations reports it
	}
	text := w.Source()
	if w.File != "" && w.loaded == nil {
		return nil, &Violation{Path: at + "/file", Rule: policyRuleCondition,
			Message: fmt.Sprintf("%q is not read: LoadPolicy reads a condition's file, relative to the policy file", w.File)}
	}
	for _, l := range langs {
		if l == nil || l.Name() != w.Language {
			continue
		}
		member := "/text"
		if w.File != "" {
			member = "/file"
		}
		cond, err := l.Compile(at+member, text)
		if err != nil {
			return nil, &Violation{Path: at + member, Rule: policyRuleCondition, Message: OneLine(err.Error())}
		}
		sum := sha256.Sum256([]byte(text))
		return &compiledWhen{language: w.Language, cond: cond, sha256: hex.EncodeToString(sum[:])}, nil
	}
	msg := fmt.Sprintf("no condition language %q is registered: set Policy.Conditions", w.Language)
	if w.Language == "cedar" {
		msg += " (import github.com/verity-go/verity/kernel/toolgate/cedar and add cedar.Language)"
	}
	return nil, &Violation{Path: at + "/language", Rule: policyRuleLanguage, Message: msg}
}

// compileConditions compiles the when condition of every rule of n into
// out.rules, returning the violations.
func (n *Policy) compileConditions(out *Compiled) []Violation {
	var vs []Violation
	for i := range n.Tools {
		w := n.Tools[i].When
		if w == nil {
			continue
		}
		cw, v := compileWhen(violation.Index("/tools", i)+"/when", w, n.Conditions)
		if v != nil {
			vs = append(vs, *v)
		}
		if cw == nil {
			continue
		}
		out.rules[i].when = cw
		out.conditions = true
	}
	return vs
}

// whenState is what a decision's conditions share: the input, built on
// first need, and each rule's answer, so that explaining a miss does not
// evaluate a condition twice.
type whenState struct {
	labels           map[string]bool // the Snapshot's
	spent, remaining kernel.Cost
	input            *ConditionInput
	evals            []gatelog.WhenEvaluation
	indexes          []int // the rule of each of evals
}

// The answers of a WhenEvaluation.
const (
	whenApplies = "applies"
	whenMisses  = "misses"
	whenRefuses = "refuses"
	whenError   = "error"
)

// evaluate runs r's condition for the call, once per decision.
func (r *compiledRule) evaluate(c *Call, a *args) (gatelog.WhenEvaluation, error) {
	ws := a.when
	for k, i := range ws.indexes {
		if i == r.index {
			return ws.evals[k], nil
		}
	}
	if ws.input == nil {
		v, err := a.value()
		if err != nil {
			return gatelog.WhenEvaluation{}, err
		}
		in := &ConditionInput{Principal: c.Principal, Tool: c.Tool, Arguments: v, Definition: c.Definition, Server: c.Server, raw: a.raw}
		for l, seen := range ws.labels {
			if seen {
				in.Labels = append(in.Labels, l)
			}
		}
		slices.Sort(in.Labels)
		in.Spent, in.Remaining = ws.spent, ws.remaining
		ws.input = in
	}
	e := gatelog.WhenEvaluation{Rule: r.ref().logID(), Language: r.when.language, TextSHA256: r.when.sha256}
	ans, err := r.when.cond.Evaluate(ws.input)
	switch {
	case err != nil:
		e.Answer, e.Error = whenError, OneLine(err.Error())
	case ans.Refuses:
		e.Answer = whenRefuses
	case ans.Applies:
		e.Answer = whenApplies
	default:
		e.Answer = whenMisses
	}
	e.Policies = slices.Clone(ans.Policies)
	ws.evals = append(ws.evals, e)
	ws.indexes = append(ws.indexes, r.index)
	return e, nil
}

// whenFit is fit's step for a rule's condition.
func (r *compiledRule) whenFit(c *Call, a *args, explain bool) (f fit, condition, why string) {
	e, err := r.evaluate(c, a)
	if err != nil {
		return fitRefuses, gatelog.ConditionArguments, "the arguments are not one JSON value every reader reads the same way: " + strings.TrimPrefix(err.Error(), "canon: ")
	}
	switch e.Answer {
	case whenError:
		return fitRefuses, gatelog.ConditionWhen, "the " + e.Language + " condition failed, so the call is refused: " + e.Error
	case whenRefuses:
		why := "the " + e.Language + " condition forbids the call"
		if len(e.Policies) > 0 {
			why += ": " + e.Policies[0]
		}
		return fitRefuses, gatelog.ConditionWhen, why
	case whenMisses:
		if explain {
			return fitMiss, gatelog.ConditionWhen, "the " + e.Language + " condition does not permit the call"
		}
		return fitMiss, "", ""
	}
	return fitApplies, "", ""
}

// logID is the rule's id in log entries: "#i", or "default".
func (r RuleRef) logID() string {
	if r.Index < 0 {
		return defaultRuleID
	}
	return "#" + strconv.Itoa(r.Index)
}

// conditionInputJSON is ConditionInput's JSON form.
type conditionInputJSON struct {
	Principal  principalJSON   `json:"principal"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
	Labels     []string        `json:"labels"`
	Spent      kernel.Cost     `json:"spent"`
	Remaining  kernel.Cost     `json:"remaining"`
	Definition string          `json:"definition"`
	Server     string          `json:"server"`
}

type principalJSON struct {
	Issuer     string            `json:"issuer"`
	Subject    string            `json:"subject"`
	Groups     []string          `json:"groups"`
	Scopes     []string          `json:"scopes"`
	Attributes map[string]string `json:"attributes"`
}

// MarshalJSON writes in as canonical JSON (RFC 8785): {"arguments",
// "definition" (left out when empty), "labels", "principal": {"attributes", "groups", "issuer", "scopes",
// "subject"}, "remaining", "server" (left out when empty), "spent", "tool"}, lists never null, costs as
// exact decimal strings.
func (in *ConditionInput) MarshalJSON() ([]byte, error) {
	var args []byte
	var err error
	if len(in.raw) > 0 {
		args, err = canon.Transform(in.raw)
	} else {
		args, err = canon.Marshal(in.Arguments)
	}
	if err != nil {
		return nil, fmt.Errorf("toolgate: condition input: arguments: %w", err)
	}
	p := &in.Principal
	b := make([]byte, 0, 256+len(args))
	b = append(b, `{"arguments":`...)
	b = append(b, args...)
	if in.Definition != "" {
		b = canon.AppendString(append(b, `,"definition":`...), in.Definition)
	}
	b = appendStrings(append(b, `,"labels":`...), in.Labels)
	b = append(b, `,"principal":{"attributes":{`...)
	keys := slices.Collect(maps.Keys(p.Attributes))
	slices.SortFunc(keys, func(x, y string) int { return canon.CompareUTF16([]byte(x), []byte(y)) })
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(canon.AppendString(b, k), ':')
		b = canon.AppendString(b, p.Attributes[k])
	}
	b = appendStrings(append(b, `},"groups":`...), p.Groups)
	b = canon.AppendString(append(b, `,"issuer":`...), p.Issuer)
	b = appendStrings(append(b, `,"scopes":`...), p.Scopes)
	b = canon.AppendString(append(b, `,"subject":`...), p.Subject)
	b = append(b, `},"remaining":`...)
	b = canon.AppendString(b, in.Remaining.String())
	if in.Server != "" {
		b = canon.AppendString(append(b, `,"server":`...), in.Server)
	}
	b = canon.AppendString(append(b, `,"spent":`...), in.Spent.String())
	b = canon.AppendString(append(b, `,"tool":`...), in.Tool)
	return append(b, '}'), nil
}

// appendStrings appends a JSON array of strings ([] for none).
func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = canon.AppendString(b, s)
	}
	return append(b, ']')
}

// UnmarshalJSON reads what MarshalJSON writes, the arguments as the gate
// reads a call's (numbers as json.Number).
func (in *ConditionInput) UnmarshalJSON(data []byte) error {
	var w conditionInputJSON
	if err := canon.DecodeInto(data, &w, true); err != nil {
		return fmt.Errorf("toolgate: condition input: %w", err)
	}
	args, err := readArguments(w.Arguments)
	if err != nil {
		return fmt.Errorf("toolgate: condition input: arguments: %w", err)
	}
	*in = ConditionInput{Principal: Principal{Issuer: w.Principal.Issuer, Subject: w.Principal.Subject, Groups: w.Principal.Groups,
		Scopes: w.Principal.Scopes, Attributes: maps.Clone(w.Principal.Attributes)}, Tool: w.Tool, Arguments: args,
		Labels: w.Labels, Spent: w.Spent, Remaining: w.Remaining, Definition: w.Definition, Server: w.Server}
	return nil
}

// record returns what the decision's conditions saw and answered, nil
// when no condition was evaluated.
func (ws *whenState) record() *gatelog.When {
	if ws == nil || len(ws.evals) == 0 {
		return nil
	}
	in, err := ws.input.MarshalJSON()
	if err != nil {
		in = nil
	}
	return &gatelog.When{Input: in, Evaluations: ws.evals}
}

// whenTagPrefix starts the tag of a kernel entry that carries a
// decision's WhenRecord.
const whenTagPrefix = "when:"

// firstSnapshot is the Snapshot of a caller with nothing on the log:
// nothing seen, nothing spent.
func (g *Gate) firstSnapshot() Snapshot {
	if !g.comp().conditions {
		return Snapshot{}
	}
	return Snapshot{Remaining: g.comp().cfg.Budget}
}

// snapshot is what the decision core knows of cl's session (cl.turn
// held); its spend is read only when a rule has a when condition, which
// alone reads it.
func (g *Gate) snapshot(cl *caller, c *Call, at time.Time) Snapshot {
	s := Snapshot{Labels: cl.labelsAt(g.conversation(c), at), Windows: cl.windows}
	if g.comp().conditions {
		cl.mu.Lock()
		ledger := cl.budget
		var st periodStatus
		if ledger != nil {
			st = ledger.status(at)
		}
		cl.mu.Unlock()
		if ledger != nil {
			// A budget that renews: the period's spend and what is left of
			// its limit (with its grants), not the kernel session's, whose
			// budget never binds.
			s.Spent, s.Remaining = st.spent, max(st.limit-st.spent, 0)
		} else {
			b := cl.sess.Meter().Budget()
			s.Spent, s.Remaining = b.Net(), b.Remaining()
		}
	}
	return s
}

// appendWhenTag appends the tag that carries w to an execution's tags.
func appendWhenTag(tags []string, w *gatelog.When) []string {
	return append(tags, string(w.AppendJSON([]byte(whenTagPrefix))))
}

// readWhenFiles reads the file of each rule's when condition that names
// one, relative to the directory of the policy file at path: a regular
// file of at most maxPolicySize bytes of UTF-8. A file that cannot be
// read refuses the policy (a *ValidationError naming the path).
func (p *Policy) readWhenFiles(path string) error {
	var vs []Violation
	for i := range p.Tools {
		w := p.Tools[i].When
		if w == nil || w.File == "" {
			continue
		}
		name := w.File
		if !filepath.IsAbs(name) {
			name = filepath.Join(filepath.Dir(path), name)
		}
		text, err := readWhenFile(name)
		if err != nil {
			vs = append(vs, Violation{Path: violation.Index("/tools", i) + "/when/file", Rule: policyRuleCondition, Message: OneLine(err.Error())})
			continue
		}
		c := *w
		c.loaded = &text
		p.Tools[i].When = &c
	}
	if len(vs) > 0 {
		return violation.New("toolgate", "policy "+path, vs, ErrInvalidPolicy)
	}
	return nil
}

func readWhenFile(name string) (string, error) {
	f, err := osfile.OpenRegular(name, os.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPolicySize+1))
	switch {
	case err != nil:
		return "", err
	case len(b) > maxPolicySize:
		return "", fmt.Errorf("%s is over %d bytes", name, maxPolicySize)
	case !utf8.Valid(b):
		return "", fmt.Errorf("%s is not UTF-8", name)
	case len(b) == 0:
		return "", fmt.Errorf("%s is empty", name)
	}
	return string(b), nil
}

// empty reports a when's text or file given empty, at at.
func (w whenWire) empty(at string) []Violation {
	var vs []Violation
	if w.Text.Set && w.Text.V == "" {
		vs = append(vs, Violation{Path: at + "/text", Rule: policyRuleRequired, Message: "a condition's text is not empty"})
	}
	if w.File.Set && w.File.V == "" {
		vs = append(vs, Violation{Path: at + "/file", Rule: policyRuleRequired, Message: "a condition's file is named"})
	}
	return vs
}
