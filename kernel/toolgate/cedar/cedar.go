package cedar

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	cedargo "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"

	"github.com/verity-go/verity/kernel/toolgate"
)

// LanguageName is the name a rule's "when" gives Cedar.
const LanguageName = "cedar"

// DefaultServer is the resource's id when Language.Server is empty.
const DefaultServer = "default"

// The entity types of the model (see the package doc).
const (
	TypePrincipal types.EntityType = "Principal"
	TypeGroup     types.EntityType = "Group"
	TypeAction    types.EntityType = "Action"
	TypeServer    types.EntityType = "Server"
)

// ErrBoundary is wrapped by the error of an input that does not fit
// Cedar's types (a number that is not an integer of 64 bits, a null in
// an array, arguments that are not an object): the call is refused, the
// value never coerced.
var ErrBoundary = errors.New("cedar: the input does not fit Cedar's types")

// Language is Cedar as a toolgate condition language: put it on
// toolgate.Policy.Conditions before Compile.
type Language struct {
	// Server is the id of the resource of a call whose input names no
	// server (Server::"<Server>"): the MCP server the gate fronts. Empty:
	// DefaultServer. A gateway's call names its upstream
	// (toolgate.Call.Server), which is then the resource.
	Server string
}

// Name returns "cedar".
func (Language) Name() string { return LanguageName }

// Compile parses text, Cedar policies, into a condition; at (the text's
// JSON Pointer in the policy file) is the file name Cedar's positions
// name. A policy's id is its @id annotation, else "policy<n>" (its
// index in the text); two policies with one id are refused.
func (l Language) Compile(at, text string) (toolgate.CompiledCondition, error) {
	ps, ids, err := parse(at, []byte(text))
	if err != nil {
		return nil, err
	}
	server := l.Server
	if server == "" {
		server = DefaultServer
	}
	return &condition{policies: ps, ids: ids, server: types.NewEntityUID(TypeServer, types.String(server))}, nil
}

// parse reads Cedar policies, naming each by its @id or index.
func parse(name string, text []byte) (*cedargo.PolicySet, []string, error) {
	list, err := cedargo.NewPolicyListFromBytes(name, text)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: Cedar does not parse it: %w", name, err)
	}
	if len(list) == 0 {
		return nil, nil, fmt.Errorf("%s: no Cedar policy: a condition permits a call with at least one permit", name)
	}
	ps := cedargo.NewPolicySet()
	var ids []string
	for i, p := range list {
		id := "policy" + strconv.Itoa(i)
		if v, ok := p.Annotations()["id"]; ok {
			id = string(v)
		}
		if !ps.Add(cedargo.PolicyID(id), p) {
			pos := p.Position()
			return nil, nil, fmt.Errorf("%s:%d:%d: two policies have the id %q", name, pos.Line, pos.Column, id)
		}
		ids = append(ids, id)
	}
	return ps, ids, nil
}

// condition is a compiled Cedar condition.
type condition struct {
	policies *cedargo.PolicySet
	ids      []string
	server   types.EntityUID
}

// Evaluate authorizes the call with Cedar over the entity model: an
// Allow applies the rule (naming the permits that matched), a Deny by a
// forbid refuses the call (naming the forbids), a Deny by no permit
// leaves the rule. An error of any policy, or an input that does not fit
// Cedar's types, is an error: the call is refused.
func (c *condition) Evaluate(in *toolgate.ConditionInput) (toolgate.ConditionAnswer, error) {
	req, entities, err := Request(in, c.server)
	if err != nil {
		return toolgate.ConditionAnswer{}, err
	}
	decision, diag := cedargo.Authorize(c.policies, entities, req)
	if len(diag.Errors) > 0 {
		errs := slices.Clone(diag.Errors)
		slices.SortFunc(errs, func(a, b types.DiagnosticError) int { return strings.Compare(string(a.PolicyID), string(b.PolicyID)) })
		e := errs[0]
		return toolgate.ConditionAnswer{}, fmt.Errorf("policy %s (%s:%d:%d): %s", e.PolicyID, e.Position.Filename, e.Position.Line, e.Position.Column, e.Message)
	}
	ans := toolgate.ConditionAnswer{}
	for _, r := range diag.Reasons {
		ans.Policies = append(ans.Policies, string(r.PolicyID))
	}
	slices.Sort(ans.Policies)
	switch {
	case decision == cedargo.Allow:
		ans.Applies = true
	case len(ans.Policies) > 0:
		ans.Refuses = true
	}
	return ans, nil
}

// Request builds the Cedar request and entities of a call (see the
// package doc for the model); the resource is Server::"<in.Server>" when
// the input names the server the call is on (a gateway's), else server. An input that does
// not fit Cedar's types is an error wrapping ErrBoundary, naming where.
// The entities are the principal's alone: groups, the action and the
// server have neither attributes nor parents, which Cedar reads the same
// as absent entities.
func Request(in *toolgate.ConditionInput, server types.EntityUID) (types.Request, Entities, error) {
	obj, ok := in.Arguments.(map[string]any)
	if !ok && in.Arguments != nil {
		return types.Request{}, Entities{}, fmt.Errorf("%w: the arguments are not a JSON object", ErrBoundary)
	}
	var b budget
	args, err := b.record(obj, "", 0)
	if err != nil {
		return types.Request{}, Entities{}, err
	}
	p := in.Principal
	puid := types.NewEntityUID(TypePrincipal, types.String(p.Key()))
	parents := make([]types.EntityUID, len(p.Groups))
	for i, g := range p.Groups {
		parents[i] = types.NewEntityUID(TypeGroup, types.String(g))
	}
	var tags types.Record
	if len(p.Attributes) > 0 {
		m := make(types.RecordMap, len(p.Attributes))
		for k, v := range p.Attributes {
			m[types.String(k)] = types.String(v)
		}
		tags = types.NewRecord(m)
	}
	principal := types.Entity{UID: puid, Parents: types.NewEntityUIDSet(parents...), Tags: tags,
		Attributes: types.NewRecord(types.RecordMap{
			"issuer":  types.String(p.Issuer),
			"subject": types.String(p.Subject),
			"groups":  stringSet(p.Groups),
			"scopes":  stringSet(p.Scopes),
		})}
	cm := types.RecordMap{
		"arguments": args,
		"labels":    stringSet(in.Labels),
		"spent":     types.Long(in.Spent),
		"remaining": types.Long(in.Remaining),
	}
	if in.Definition != "" {
		cm["definition_hash"] = types.String(in.Definition)
	}
	ctx := types.NewRecord(cm)
	if in.Server != "" {
		server = types.NewEntityUID(TypeServer, types.String(in.Server))
	}
	req := types.Request{Principal: puid, Action: types.NewEntityUID(TypeAction, types.String(in.Tool)), Resource: server, Context: ctx}
	return req, Entities{principal}, nil
}

// Entities are the entities of one request: the principal.
type Entities struct {
	Principal types.Entity
}

// Get returns the entity uid names, if it is the principal
// (types.EntityGetter).
func (e Entities) Get(uid types.EntityUID) (types.Entity, bool) {
	if uid == e.Principal.UID {
		return e.Principal, true
	}
	return types.Entity{}, false
}

func stringSet(ss []string) types.Set {
	if len(ss) == 0 {
		return types.Set{}
	}
	vs := make([]types.Value, len(ss))
	for i, s := range ss {
		vs[i] = types.String(s)
	}
	return types.NewSet(vs...)
}

// The bounds of the arguments a request holds: Cedar builds a set in
// time quadratic in its elements whose hashes collide (sets of sets whose
// sums agree), so that without them one call of a few hundred kilobytes
// would hold a gate for seconds. Arguments beyond them refuse the call.
const (
	MaxSetElements = 256  // elements of one array
	MaxValues      = 4096 // values in all the arguments
	MaxDepth       = 32   // nested arrays and objects
)

// budget counts the values converted so far.
type budget struct{ values int }

func (b *budget) take(at string, depth int) error {
	if b.values++; b.values > MaxValues {
		return fmt.Errorf("%w: argument %s: the arguments hold more than %d values", ErrBoundary, at, MaxValues)
	}
	if depth > MaxDepth {
		return fmt.Errorf("%w: argument %s: nested deeper than %d", ErrBoundary, at, MaxDepth)
	}
	return nil
}

// record converts a JSON object at pointer at: a member that is null is
// left out (Cedar has no null: has is false for it).
func (b *budget) record(obj map[string]any, at string, depth int) (types.Record, error) {
	m := make(types.RecordMap, len(obj))
	// In the keys' order, so that which problem a call is refused for
	// does not depend on a map's order.
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		v := obj[k]
		if v == nil {
			continue
		}
		cv, err := b.value(v, at+"/"+escape(k), depth+1)
		if err != nil {
			return types.Record{}, err
		}
		m[types.String(k)] = cv
	}
	return types.NewRecord(m), nil
}

// value converts one JSON value at pointer at: a string, a boolean, an
// integer of 64 bits (a number literal without fraction or exponent), an
// array (a Cedar Set: order and repeats are lost) or an object.
func (b *budget) value(v any, at string, depth int) (types.Value, error) {
	if err := b.take(at, depth); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case string:
		return types.String(x), nil
	case bool:
		return types.Boolean(x), nil
	case json.Number:
		return long(string(x), at)
	case float64:
		// A tree not from the gate's reader: only integral values in
		// range, never rounded.
		if x != x || x < -(1<<63) || x >= 1<<63 || x != float64(int64(x)) {
			return nil, fmt.Errorf("%w: argument %s: %v is not an integer of 64 bits (Cedar's Long)", ErrBoundary, at, x)
		}
		return types.Long(int64(x)), nil
	case map[string]any:
		return b.record(x, at, depth)
	case []any:
		if len(x) > MaxSetElements {
			return nil, fmt.Errorf("%w: argument %s has %d elements, more than %d", ErrBoundary, at, len(x), MaxSetElements)
		}
		vs := make([]types.Value, len(x))
		for i, e := range x {
			if e == nil {
				return nil, fmt.Errorf("%w: argument %s/%d is null, which a Cedar set cannot hold", ErrBoundary, at, i)
			}
			cv, err := b.value(e, at+"/"+strconv.Itoa(i), depth+1)
			if err != nil {
				return nil, err
			}
			vs[i] = cv
		}
		return types.NewSet(vs...), nil
	}
	return nil, fmt.Errorf("%w: argument %s is a %T", ErrBoundary, at, v)
}

// long reads a number literal as a Cedar Long: an integer literal
// within 64 bits; a fraction or an exponent (1.0, 1e3), NaN or a larger
// integer is refused.
func long(s, at string) (types.Value, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		why := "is not an integer"
		if !strings.ContainsAny(s, ".eE") {
			why = "is beyond 64 bits"
		}
		return nil, fmt.Errorf("%w: argument %s: %.40s %s (Cedar's Long; a number with a fraction or an exponent is not one)", ErrBoundary, at, s, why)
	}
	return types.Long(n), nil
}

// escape escapes a JSON Pointer token.
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
