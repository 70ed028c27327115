package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/osfile"
	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
)

// MaxSize bounds a cases file.
const MaxSize = 8 << 20

// ErrInvalid is wrapped by every refusal of a cases file.
var ErrInvalid = errors.New("scenario: invalid cases file")

// The rules a refused file's violations name besides strict JSON's
// (violation.RuleSyntax, RuleDuplicateKey, RuleUnknownField, RuleType,
// RuleRequired).
const (
	RuleSize      = "size"      // the file is over MaxSize bytes
	RuleEmpty     = "empty"     // no cases, or a scenario without steps
	RuleForm      = "form"      // a case mixes one call and steps, or a step is not one event
	RuleEnum      = "enum"      // a verdict that is not allow, refuse or ask_approval
	RuleTime      = "time"      // not an RFC 3339 time
	RuleDuration  = "duration"  // not a Go duration, or out of its range
	RuleCost      = "cost"      // not a cost kernel.ParseCost reads
	RuleReference = "reference" // a step named that no earlier step is, or a name used twice
	RuleRange     = "range"     // a count out of its range
)

// A Case is one case of a cases file: one call decided by the policy's
// decision core (a case without steps), or a scenario, steps played on
// a Gate. Parse makes them; a Runner runs them.
type Case struct {
	w caseWire
}

// Name returns the case's name.
func (c Case) Name() string { return c.w.Name }

// IsScenario reports whether the case has steps.
func (c Case) IsScenario() bool { return c.w.Steps != nil }

// Load reads the cases file at path (see Parse). A path that is not a
// regular file is refused without blocking.
func Load(path string) ([]Case, error) {
	f, err := osfile.OpenRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("scenario: reading cases: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("scenario: reading cases: %w", err)
	}
	return parse(data, "cases "+path)
}

// Parse reads a cases file. It is strict JSON as every Verity file is
// (internal/strictjson: one JSON text, valid UTF-8, no member twice, no
// member the format does not define, exact integers), then checked: a
// file is refused with every problem it has, as a *toolgate.ValidationError
// wrapping ErrInvalid, each violation naming its JSON Pointer and rule.
func Parse(data []byte) ([]Case, error) { return parse(data, "cases") }

func parse(data []byte, subject string) ([]Case, error) {
	if len(data) > MaxSize {
		return nil, violation.New("scenario", subject, []toolgate.Violation{{Rule: RuleSize,
			Message: fmt.Sprintf("the file is over %d bytes", MaxSize)}}, ErrInvalid)
	}
	var f fileWire
	var decoded []toolgate.Violation
	if err := strictjson.Unmarshal(bytes.TrimPrefix(data, bom), &f); err != nil {
		var se *strictjson.Error
		if !errors.As(err, &se) { // unreachable: f is a pointer to a struct
			return nil, fmt.Errorf("scenario: %w", err)
		}
		decoded = se.Violations()
		var syn *canon.SyntaxError
		if errors.As(err, &syn) {
			// Not one strict JSON text: refused as a whole.
			return nil, violation.New("scenario", subject, decoded, ErrInvalid)
		}
	}
	// What the types could not say is checked too, except within a
	// member that did not decode: it is reported once, by the decoder.
	vs := decoded
	for _, v := range f.check(decoded) {
		if !slices.ContainsFunc(decoded, func(u toolgate.Violation) bool { return under(u.Path, v.Path) }) {
			vs = append(vs, v)
		}
	}
	if len(vs) > 0 {
		return nil, violation.New("scenario", subject, vs, ErrInvalid)
	}
	out := make([]Case, len(f.Cases))
	for i, c := range f.Cases {
		out[i] = Case{w: c}
	}
	return out, nil
}

// bom is the UTF-8 byte order mark some editors write first; it is
// skipped, as in a policy file.
var bom = []byte("\xef\xbb\xbf")

// The file, one tagged struct per object: the only description of the
// format in Go.

type fileWire struct {
	Schema string     `json:"$schema,omitempty"`
	Cases  []caseWire `json:"cases"`
}

// caseWire is a case: one call (callWire, labels, before, at, expect and
// what is checked of the ruling), or a scenario (its settings and steps).
type caseWire struct {
	Name string `json:"name"`

	callWire
	Labels      []string   `json:"labels,omitempty"`
	Before      []callWire `json:"before,omitempty"`
	At          string     `json:"at,omitempty"`
	Expect      string     `json:"expect,omitempty"`
	Rule        *string    `json:"rule,omitempty"`
	Condition   *string    `json:"condition,omitempty"`
	Reason      *string    `json:"reason,omitempty"`
	Explanation *string    `json:"explanation,omitempty"`

	DurableApprovals bool        `json:"durable_approvals,omitempty"`
	Start            string      `json:"start,omitempty"`
	CallerLimit      *int        `json:"caller_limit,omitempty"`
	IdleCallers      string      `json:"idle_callers,omitempty"`
	Steps            []*stepWire `json:"steps,omitempty"`

	at, start time.Time
	idle      time.Duration
}

// callWire is a call as a single-call case and its before calls give it.
// arguments_text gives the arguments as sent, in a string, for those
// the file could not hold as JSON: a member twice, say.
type callWire struct {
	Tool          string          `json:"tool,omitempty"`
	Arguments     json.RawMessage `json:"arguments,omitempty"`
	ArgumentsText *string         `json:"arguments_text,omitempty"`
	Principal     *principalWire  `json:"principal,omitempty"`
}

// check reports a call without a tool, or with its arguments given twice.
func (c *callWire) check(at string, add adder) {
	if c.Tool == "" {
		add(violation.Join(at, "tool"), violation.RuleRequired, "no tool")
	}
	if c.Arguments != nil && c.ArgumentsText != nil {
		add(at, RuleForm, "arguments and arguments_text both given: give the arguments once")
	}
}

type principalWire struct {
	Issuer     string            `json:"issuer,omitempty"`
	Subject    string            `json:"subject,omitempty"`
	Groups     []string          `json:"groups,omitempty"`
	Scopes     []string          `json:"scopes,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// stepCall is a scenario's call: with its id and caller.
type stepCall struct {
	callWire
	ID     string `json:"id,omitempty"`
	Caller string `json:"caller,omitempty"`
}

// stepWire is one event, exactly one of its event members, and what it
// is expected to do.
type stepWire struct {
	Name       string          `json:"name,omitempty"`
	Call       *stepCall       `json:"call,omitempty"`
	Resume     *resumeWire     `json:"resume,omitempty"`
	Approve    *answerWire     `json:"approve,omitempty"`
	Deny       *answerWire     `json:"deny,omitempty"`
	Advance    *string         `json:"advance,omitempty"`
	Expire     *struct{}       `json:"expire,omitempty"`
	Unanswered *unansweredWire `json:"unanswered,omitempty"`
	Result     *resultWire     `json:"result,omitempty"`
	Restart    *struct{}       `json:"restart,omitempty"`
	Declassify *declassifyWire `json:"declassify,omitempty"`
	Expect     *expectWire     `json:"expect,omitempty"`

	advance time.Duration
}

// declassifyWire clears a label from a caller's session
// (toolgate.Gate.Declassify): by an approver's name ("human" when
// neither is given) or a principal (by), with a reason.
type declassifyWire struct {
	Caller   string         `json:"caller"`
	Label    string         `json:"label"`
	Approver string         `json:"approver,omitempty"`
	By       *principalWire `json:"by,omitempty"`
	Reason   string         `json:"reason"`
}

// answerWire names a request, by the step that asked it (request) or by
// its id as given (request_id, for an answer to no question), and who
// answers: an approver's name, or a principal (by).
type answerWire struct {
	Request   string         `json:"request,omitempty"`
	RequestID string         `json:"request_id,omitempty"`
	Approver  string         `json:"approver,omitempty"`
	By        *principalWire `json:"by,omitempty"`
	Reason    string         `json:"reason,omitempty"`
}

type resumeWire struct {
	Call      stepCall          `json:"call"`
	Request   string            `json:"request,omitempty"`
	RequestID string            `json:"request_id,omitempty"`
	Answer    *resumeAnswerWire `json:"answer,omitempty"`
}

type resumeAnswerWire struct {
	Approved bool           `json:"approved"`
	Approver string         `json:"approver,omitempty"`
	By       *principalWire `json:"by,omitempty"`
	Reason   string         `json:"reason,omitempty"`
}

type unansweredWire struct {
	Call   string `json:"call"`
	Waited string `json:"waited"`

	waited time.Duration
}

type resultWire struct {
	Call   string  `json:"call"`
	Output string  `json:"output,omitempty"`
	Error  *string `json:"error,omitempty"`
	Cost   *string `json:"cost,omitempty"`

	cost kernel.Cost
}

// expectWire is what a step is expected to do; only the members given
// are checked, except entries, which lists every entry the step appended.
type expectWire struct {
	Verdict     *string                      `json:"verdict,omitempty"`
	Rule        *string                      `json:"rule,omitempty"`
	Condition   *string                      `json:"condition,omitempty"`
	Reason      *string                      `json:"reason,omitempty"`
	Explanation *string                      `json:"explanation,omitempty"`
	Request     *string                      `json:"request,omitempty"`
	Approved    *bool                        `json:"approved,omitempty"`
	Error       *string                      `json:"error,omitempty"`
	Charged     *string                      `json:"charged,omitempty"`
	Unpaid      *string                      `json:"unpaid,omitempty"`
	Expired     *int                         `json:"expired,omitempty"`
	Waiting     *int                         `json:"waiting,omitempty"`
	Budget      *string                      `json:"budget,omitempty"`
	Caller      *string                      `json:"caller,omitempty"`
	Callers     *callersWire                 `json:"callers,omitempty"`
	Entries     []map[string]json.RawMessage `json:"entries,omitempty"`

	charged, unpaid, budget kernel.Cost
}

type callersWire struct {
	Live    *int `json:"live,omitempty"`
	Evicted *int `json:"evicted,omitempty"`
}

// The checks that types cannot say. Each fills in the parsed values
// (times, durations, costs) the runner uses.

// check returns what is wrong with f beyond its types. decoded are the
// decoder's violations: a case that is not an object, or whose steps are
// not an array, cannot be told a single call or a scenario, and is not
// checked further.
func (f *fileWire) check(decoded []toolgate.Violation) []toolgate.Violation {
	var vs []toolgate.Violation
	add := func(path, rule, format string, args ...any) {
		vs = append(vs, toolgate.Violation{Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
	}
	if f.Cases != nil && len(f.Cases) == 0 {
		add("/cases", RuleEmpty, "no cases")
	}
	for i, c := range f.Cases {
		at := violation.Index("/cases", i)
		if slices.ContainsFunc(decoded, func(u toolgate.Violation) bool {
			return u.Path == at || u.Path == violation.Join(at, "steps")
		}) {
			continue
		}
		c.check(at, add)
		f.Cases[i] = c
	}
	violation.Sort(vs)
	return vs
}

// under reports whether the JSON Pointer p is at or under base.
func under(base, p string) bool {
	return p == base || strings.HasPrefix(p, base+"/")
}

type adder func(path, rule, format string, args ...any)

// verdicts are the verdicts a case expects, as Verdict.String spells them.
var verdicts = []string{"allow", "refuse", "ask_approval"}

func (c *caseWire) check(at string, add adder) {
	if c.Name == "" {
		add(violation.Join(at, "name"), violation.RuleRequired, "no name")
	}
	if c.Steps == nil {
		c.checkCall(at, add)
		return
	}
	if c.Tool != "" || c.Arguments != nil || c.ArgumentsText != nil || c.Principal != nil || c.Labels != nil || c.Before != nil ||
		c.At != "" || c.Expect != "" || c.Rule != nil || c.Condition != nil || c.Reason != nil || c.Explanation != nil {
		add(at, RuleForm, "a case with steps has no tool, arguments, principal, labels, before, at, expect, rule, condition, reason or explanation: its steps say them")
	}
	if len(c.Steps) == 0 {
		add(violation.Join(at, "steps"), RuleEmpty, "no steps")
	}
	c.start = epoch
	if c.Start != "" {
		t, err := time.Parse(time.RFC3339Nano, c.Start)
		if err != nil {
			add(violation.Join(at, "start"), RuleTime, "not an RFC 3339 time: %q", c.Start)
		}
		c.start = t.UTC()
	}
	if c.CallerLimit != nil && *c.CallerLimit < 1 {
		add(violation.Join(at, "caller_limit"), RuleRange, "caller_limit %d is below 1", *c.CallerLimit)
	}
	if c.IdleCallers != "" {
		c.idle = duration(violation.Join(at, "idle_callers"), c.IdleCallers, time.Nanosecond, add)
	}
	named := map[string]*stepWire{}
	for i, s := range c.Steps {
		sat := violation.Index(violation.Join(at, "steps"), i)
		if s == nil {
			add(sat, violation.RuleType, "want an object, got null")
			continue
		}
		s.check(sat, named, add)
		if s.Name != "" {
			if _, dup := named[s.Name]; dup {
				add(violation.Join(sat, "name"), RuleReference, "step name %q used twice", s.Name)
			}
			named[s.Name] = s
		}
	}
}

func (c *caseWire) checkCall(at string, add adder) {
	if c.DurableApprovals || c.Start != "" || c.CallerLimit != nil || c.IdleCallers != "" {
		add(at, RuleForm, "durable_approvals, start, caller_limit and idle_callers are a scenario's: a case without steps has none")
	}
	c.callWire.check(at, add)
	if !slices.Contains(verdicts, c.Expect) {
		add(violation.Join(at, "expect"), RuleEnum, "expect %q is not allow, refuse or ask_approval", c.Expect)
	}
	c.at = epoch
	if c.At != "" {
		t, err := time.Parse(time.RFC3339Nano, c.At)
		if err != nil {
			add(violation.Join(at, "at"), RuleTime, "not an RFC 3339 time: %q", c.At)
		}
		c.at = t.UTC()
	}
	for j, b := range c.Before {
		b.check(violation.Index(violation.Join(at, "before"), j), add)
	}
}

// events names a step's event members, in the order the format lists them.
func (s *stepWire) events() []string {
	var out []string
	for _, e := range []struct {
		name string
		set  bool
	}{
		{"call", s.Call != nil}, {"resume", s.Resume != nil}, {"approve", s.Approve != nil},
		{"deny", s.Deny != nil}, {"advance", s.Advance != nil}, {"expire", s.Expire != nil},
		{"unanswered", s.Unanswered != nil}, {"result", s.Result != nil}, {"restart", s.Restart != nil},
		{"declassify", s.Declassify != nil},
	} {
		if e.set {
			out = append(out, e.name)
		}
	}
	return out
}

// asks reports whether a step may ask a human: a call or a resume.
func (s *stepWire) asks() bool { return s.Call != nil || s.Resume != nil }

func (s *stepWire) check(at string, named map[string]*stepWire, add adder) {
	switch ev := s.events(); len(ev) {
	case 0:
		add(at, RuleForm, "no event: a step is one of call, resume, approve, deny, advance, expire, unanswered, result, restart or declassify")
	case 1:
	default:
		add(at, RuleForm, "events %v in one step: a step is one event", ev)
	}
	// refer checks that name names an earlier call or resume step.
	refer := func(path, name string) {
		if t, ok := named[name]; !ok || !t.asks() {
			add(path, RuleReference, "no earlier call or resume step is named %q", name)
		}
	}
	call := func(path string, c *stepCall) { c.check(path, add) }
	answer := func(path, approver string, by *principalWire) {
		if approver != "" && by != nil {
			add(path, RuleForm, "approver and by both given: an answer is given by one")
		}
	}
	request := func(path, request, id string) {
		switch {
		case request != "" && id != "":
			add(path, RuleForm, "request and request_id both given: name the request once")
		case request != "":
			refer(violation.Join(path, "request"), request)
		}
	}
	switch {
	case s.Call != nil:
		call(violation.Join(at, "call"), s.Call)
	case s.Resume != nil:
		p := violation.Join(at, "resume")
		call(violation.Join(p, "call"), &s.Resume.Call)
		request(p, s.Resume.Request, s.Resume.RequestID)
		if a := s.Resume.Answer; a != nil {
			answer(violation.Join(p, "answer"), a.Approver, a.By)
		}
	case s.Approve != nil:
		request(violation.Join(at, "approve"), s.Approve.Request, s.Approve.RequestID)
		answer(violation.Join(at, "approve"), s.Approve.Approver, s.Approve.By)
	case s.Deny != nil:
		request(violation.Join(at, "deny"), s.Deny.Request, s.Deny.RequestID)
		answer(violation.Join(at, "deny"), s.Deny.Approver, s.Deny.By)
	case s.Declassify != nil:
		answer(violation.Join(at, "declassify"), s.Declassify.Approver, s.Declassify.By)
	case s.Advance != nil:
		s.advance = duration(violation.Join(at, "advance"), *s.Advance, time.Nanosecond, add)
	case s.Unanswered != nil:
		p := violation.Join(at, "unanswered")
		refer(violation.Join(p, "call"), s.Unanswered.Call)
		s.Unanswered.waited = duration(violation.Join(p, "waited"), s.Unanswered.Waited, 0, add)
	case s.Result != nil:
		p := violation.Join(at, "result")
		refer(violation.Join(p, "call"), s.Result.Call)
		if s.Result.Cost != nil {
			s.Result.cost = cost(violation.Join(p, "cost"), *s.Result.Cost, add)
		}
	}
	if e := s.Expect; e != nil {
		e.check(violation.Join(at, "expect"), s, named, add)
	}
}

func (e *expectWire) check(at string, self *stepWire, named map[string]*stepWire, add adder) {
	if e.Verdict != nil && !slices.Contains(verdicts, *e.Verdict) {
		add(violation.Join(at, "verdict"), RuleEnum, "verdict %q is not allow, refuse or ask_approval", *e.Verdict)
	}
	if e.Request != nil {
		if t, ok := named[*e.Request]; !ok || !t.asks() {
			add(violation.Join(at, "request"), RuleReference, "no earlier call or resume step is named %q", *e.Request)
		}
	}
	if e.Charged != nil {
		e.charged = cost(violation.Join(at, "charged"), *e.Charged, add)
	}
	if e.Unpaid != nil {
		e.unpaid = cost(violation.Join(at, "unpaid"), *e.Unpaid, add)
	}
	if e.Budget != nil {
		e.budget = cost(violation.Join(at, "budget"), *e.Budget, add)
	}
	for _, n := range []struct {
		name string
		v    *int
	}{{"expired", e.Expired}, {"waiting", e.Waiting}} {
		if n.v != nil && *n.v < 0 {
			add(violation.Join(at, n.name), RuleRange, "%s %d is negative", n.name, *n.v)
		}
	}
	if c := e.Callers; c != nil {
		for _, n := range []struct {
			name string
			v    *int
		}{{"live", c.Live}, {"evicted", c.Evicted}} {
			if n.v != nil && *n.v < 0 {
				add(violation.Join(violation.Join(at, "callers"), n.name), RuleRange, "%s %d is negative", n.name, *n.v)
			}
		}
	}
	for i, m := range e.Entries {
		p := violation.Index(violation.Join(at, "entries"), i)
		k, ok := m["kind"]
		if !ok {
			add(p, violation.RuleRequired, "an entry names its kind")
			continue
		}
		var kind string
		if json.Unmarshal(k, &kind) != nil || kind == "" {
			add(violation.Join(p, "kind"), violation.RuleType, "want a non-empty string")
		}
		for _, name := range sortedKeys(m) {
			for _, ref := range placeholder.FindAllStringSubmatch(string(m[name]), -1) {
				t, ok := named[ref[2]]
				if self.Name == ref[2] {
					t, ok = self, true
				}
				if !ok || !t.asks() {
					add(violation.Join(p, name), RuleReference, "%s: no call or resume step up to this one is named %q", ref[0], ref[2])
				}
			}
		}
	}
}

// placeholder is a reference, inside a string of an expected entry, to
// the id of the request a step asked or of the call it made: {request
// ask}, {call run}. Ids are the gate's to choose: a file that names them
// so does not depend on the order the gate takes them in.
var placeholder = regexp.MustCompile(`\{(request|call) ([^{}"\\]+)\}`)

func duration(at, s string, least time.Duration, add adder) time.Duration {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		add(at, RuleDuration, "not a Go duration: %q", s)
	case d < least:
		add(at, RuleDuration, "%s is below %s", s, least)
	}
	return d
}

func cost(at, s string, add adder) kernel.Cost {
	c, err := kernel.ParseCost(s)
	if err != nil {
		add(at, RuleCost, "%v", err)
	}
	return c
}
