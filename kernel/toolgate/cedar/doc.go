// Package cedar lets a toolgate rule's condition be written in Cedar
// (https://www.cedarpolicy.com), evaluated in-process with
// github.com/cedar-policy/cedar-go, beside the gate's exact budgets,
// rate windows, flow labels and approvals. It is a nested module, so
// that the root module does not depend on cedar-go.
//
// # What Cedar decides, and what stays native
//
// Cedar decides stateless conditions over the call and what the
// caller's session has recorded: who calls (issuer, subject, groups,
// scopes, attributes), which tool, on which server, with which
// arguments, after which labels, having spent how much. What Cedar
// cannot express stays native and verifiable: the charge and the budget
// (the kernel's T1), rate windows, the labels a call attaches, approvals
// and who gave them. A Cedar condition chooses whether a rule applies;
// the rule's cost, rate, labels, flow and tier then apply as always.
//
// # A rule's condition
//
// A rule of a version 2 policy file takes
//
//	"when": {"language": "cedar", "text": "permit (…) when { … }; forbid (…) when { … };"}
//
// or keeps the text in a file beside the policy file, which LoadPolicy
// reads ("when": {"language": "cedar", "file": "github.cedar"}), and the
// host registers the language before Compile:
//
//	p, err := toolgate.LoadPolicy("policy.json")
//	p.Conditions = append(p.Conditions, cedar.Language{Server: "github"})
//	comp, err := p.Compile() // Cedar that does not parse is a violation at /tools/i/when/text
//
// Compile without the language refuses the rule, naming this package.
// verity-mcp registers it. For each call the rule's tool matches, Cedar
// authorizes the request below with the text's policies:
//
//   - Allow (a permit holds, no forbid): the rule applies.
//   - Deny by a forbid: the call is refused at the rule (condition
//     "when", reason "condition"), the explanation naming the forbid's
//     policy id.
//   - Deny with no policy holding: the rule does not apply; the next
//     rule is tried.
//   - An error of any policy (an attribute the call does not have, an
//     overflow), or an input that does not fit Cedar's types: the call
//     is refused at the rule (fail closed), with the reason.
//
// A policy's id is its @id annotation ("@id(\"eng-acme\") permit …"),
// else policy0, policy1, … in the text's order.
//
// # The entity model
//
// The request of a call:
//
//	principal  Principal::"<Principal.Key(): issuer|subject>"
//	           in Group::"<g>" for each of its groups, with the attributes
//	             issuer: String, subject: String,
//	             groups: Set<String>, scopes: Set<String>
//	           and its Principal.Attributes as tags (principal.getTag("team"))
//	action     Action::"<the tool's name>"  (namespaced as the upstream
//	           names its tools: "github.create_pull_request")
//	resource   Server::"<Call.Server>", the upstream a gateway's call is on
//	           (verity-mcp -config); for a call on no named server,
//	           Server::"<Language.Server>" ("default" when empty)
//	context    arguments: the call's arguments, a Record
//	           labels:    Set<String>, the labels the caller's session has seen
//	           spent:     Long, the caller's budget spent (net of refunds),
//	                      in thousandths of a unit (the policy's "0.001")
//	           remaining: Long, the caller's budget left, in thousandths
//	           definition_hash: String, optional: the pinned hash of the
//	                      tool's definition ("sha256:…", kernel/toolgate/pin)
//	                      when the host pins definitions (Call.Definition);
//	                      test it with context has definition_hash
//
// Entities other than the principal (groups, actions, the server) have
// neither attributes nor parents.
//
// Arguments become Cedar values at the boundary, never coerced: a
// string is a String, a boolean a Bool, an object a Record (a member
// that is null is left out, so has is false for it), an array a Set
// (order and repeats are lost; a null element is refused), and a number
// a Long only when it is an integer literal within 64 bits: 1.5, 1.0,
// 1e3 and 9223372036854775808 are refused (ErrBoundary), and so are
// arguments that are not an object. So are arguments beyond the bounds
// (MaxSetElements elements in one array, MaxValues values in all,
// MaxDepth levels): Cedar builds a set in time quadratic in elements
// whose hashes collide, which a hostile agent could otherwise use to hold
// the gate. A refused input refuses the call.
//
// # The schema, and Cedar's validator
//
// Schema writes the Cedar schema of the model for a server's tools, the
// context's arguments typed from each tool's inputSchema (string,
// integer, boolean, arrays of them, objects; what Cedar cannot type is
// left out, so that a policy reading it does not validate); Validator
// runs Cedar's own validator (strict) against it. The verity-cedar
// command does both: `verity-cedar schema -- UPSTREAM…` lists a live
// server's tools over stdio, `verity-cedar check -schema S POLICY` checks
// a .cedar file or every Cedar condition of a policy file, each error
// located (file:line:col).
//
// # Attribution and replay
//
// The gate records what a decision's conditions saw and answered
// (gatelog.When: the input as canonical JSON, and for each rule tried its
// language, the SHA-256 of its text, its answer and the policy ids that
// determined it) with the decision itself: the "when" member of a
// toolgate.refuse entry, a "when:" tag of the kernel's execution or
// rejection. Replay (`verity-cedar replay -policy P LOG`) evaluates each
// recorded Cedar condition again from the recorded input and fails on a
// different answer, or on a policy whose Cedar text is not the one
// recorded. `verity replay` checks the rest of a log; the root module
// cannot evaluate Cedar, so the Cedar part of a replay is this command's.
//
// # Not covered
//
// Requests that wait for a human (gatelog.Ask) do not carry the record:
// the execution after the approval does. A Cedar condition is
// evaluated once per call and rule; entity attributes are built per
// call, about ten microseconds per Cedar rule tried
// (BenchmarkEvaluate).
package cedar
