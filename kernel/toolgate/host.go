package toolgate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/verity-go/verity/kernel"
)

// maxToolTimeout is the longest Timeout a policy may give a tool: a day.
const maxToolTimeout = 24 * time.Hour

// maxCostPointerLen bounds a cost_from pointer.
const maxCostPointerLen = 1024

// CostPointer is a parsed cost_from: where, in an MCP tool result
// (CallToolResult), the figure a reserved call is settled at is. Its
// first token is "structuredContent" or "_meta".
type CostPointer struct {
	tokens []string
}

// String returns the pointer as written.
func (p CostPointer) String() string {
	var b strings.Builder
	for _, t := range p.tokens {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// ParseCostPointer parses a cost_from: an RFC 6901 JSON Pointer of at
// most 1024 bytes whose first token is "structuredContent" or "_meta"
// ("/structuredContent/scanned", "/_meta/cost"), naming a member below
// either.
func ParseCostPointer(s string) (CostPointer, error) {
	if len(s) > maxCostPointerLen {
		return CostPointer{}, fmt.Errorf("toolgate: cost_from of %d bytes, at most %d", len(s), maxCostPointerLen)
	}
	if s == "" {
		return CostPointer{}, errors.New("toolgate: cost_from is empty: it is a JSON Pointer such as \"/structuredContent/cost\"")
	}
	tokens, err := pointerTokens(s)
	if err != nil {
		return CostPointer{}, fmt.Errorf("toolgate: cost_from: %w", err)
	}
	if tokens[0] != "structuredContent" && tokens[0] != "_meta" {
		return CostPointer{}, fmt.Errorf("toolgate: cost_from %q points outside the result's structuredContent and _meta", s)
	}
	if len(tokens) < 2 && tokens[0] == "_meta" {
		return CostPointer{}, fmt.Errorf("toolgate: cost_from %q names _meta itself, not a figure in it", s)
	}
	return CostPointer{tokens: tokens}, nil
}

// Measure reads the figure p names in result, an MCP CallToolResult as
// JSON: a JSON number or a string holding a decimal amount of units
// (kernel.ParseCost: non-negative, whole thousandths). A result that is
// not JSON, a figure missing, of another type or not a valid cost is an
// error: the call is then unmeasured, and settled at its reservation.
func (p CostPointer) Measure(result []byte) (kernel.Cost, error) {
	if len(p.tokens) == 0 {
		return 0, errors.New("toolgate: no cost pointer")
	}
	d := json.NewDecoder(bytes.NewReader(result))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return 0, fmt.Errorf("toolgate: the result is not JSON: %w", err)
	}
	if d.More() {
		return 0, errors.New("toolgate: the result is more than one JSON value")
	}
	x, ok := lookup(v, p.tokens)
	if !ok {
		return 0, fmt.Errorf("toolgate: the result has no %s", p)
	}
	var text string
	switch n := x.(type) {
	case json.Number:
		text = string(n)
	case string:
		text = n
	default:
		return 0, fmt.Errorf("toolgate: %s is not a number", p)
	}
	c, err := kernel.ParseCost(text)
	if err != nil {
		return 0, fmt.Errorf("toolgate: %s: %w", p, err)
	}
	return c, nil
}

// Compiled returns the compiled policy the gate decides by: its
// Policy (the defaults applied: AllowUnknown, ApprovalTimeout, Timeout),
// RuleOf to find the rule a Decision names, and MayCall to know which
// tools to list to a principal.
func (g *Gate) Compiled() *Compiled { return g.comp() }

// RuleOf returns the rule ref names — one of Policy.Tools, or the
// default rule for Index -1 when unknown tools are allowed — with the
// policy's defaults applied: its Timeout is the policy's Timeout when it
// has none of its own (how long a host waits for the tool; zero: as long
// as the caller waits).
func (c *Compiled) RuleOf(ref RuleRef) (Rule, bool) {
	var r Rule
	switch {
	case !ref.Found:
		return Rule{}, false
	case ref.Index < 0:
		d := c.cfg.DefaultRule
		if d == nil || !c.cfg.AllowUnknown {
			return Rule{}, false
		}
		r = *d
	case ref.Index < len(c.cfg.Tools):
		r = c.cfg.Tools[ref.Index]
	default:
		return Rule{}, false
	}
	if r.Timeout <= 0 {
		r.Timeout = c.cfg.Timeout
	}
	return r, true
}

// MayCall reports whether some call of tool by p may be allowed (or
// asked of a human): false when the first rule that matches tool and
// admits p, and looks at nothing else, refuses (effect "refuse"), or
// when no rule may apply and unknown tools are refused. A rule with an
// argument schema or paths may or may not apply, so it neither grants
// nor forecloses: the rules after it are read too. Budgets, rates and
// flows, which change as calls are made, are not read. A host lists to
// p only the tools MayCall reports.
func (c *Compiled) MayCall(tool string, p Principal) bool {
	for i := range c.rules {
		r := &c.rules[i]
		if !r.matchesTool(tool) || (r.Principals != nil && !r.Principals.admits(p)) {
			continue
		}
		conditional := r.schema != nil || len(r.paths) > 0
		switch {
		case r.Effect != EffectRefuse:
			return true
		case !conditional:
			return false
		}
	}
	return c.allowUnknown
}
