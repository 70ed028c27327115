package main

//lint:file-ignore SA5008 internal/strictjson reads these structs: its tag option "optional" (a member that may be absent) is one staticcheck does not know, and strictjson refuses an unknown option itself

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
)

// The decisions an answer may carry.
const (
	decisionApprove = "approve"
	decisionDeny    = "deny"
)

// Bounds of an answer's members.
const (
	maxAnswerID     = 128
	maxAnswerReason = 1000
)

// The rules an answer is checked against beyond its JSON shape (the shape
// is reported with internal/violation's rules: syntax, duplicate_key,
// type, unknown_field, required).
const (
	answerRuleEnum      = "enum"      // a decision other than "approve" or "deny"
	answerRuleLength    = "length"    // an id or a reason of too many (or no) bytes
	answerRuleCharacter = "character" // a character an id or a reason may not hold
)

// errAnswer is every refusal of decodeAnswer.
var errAnswer = errors.New("malformed answer")

// inboxAnswer is the body of POST /api/answer.
type inboxAnswer struct {
	ID       string `json:"id"`
	Decision string `json:"decision"`
	Reason   string `json:"reason,optional"`
}

// decodeAnswer reads an answer in one pass with the strict reader every
// Verity decoder uses (internal/strictjson), then checks it. The body is
// one strict JSON text (valid UTF-8, no lone surrogate, no member twice,
// nothing after the value) holding an object with exactly the members id
// and decision and optionally reason, named exactly (an "ID" or a "Reason"
// is an unknown member), all strings (null is not one); id 1 to 128
// printable ASCII characters without spaces, decision "approve" or
// "deny", reason at most 1000 bytes without control, format, line or
// paragraph separator characters (a reason is recorded on the log and
// shown to people: it may not hide text).
//
// A refusal wraps errAnswer and is a *violation.ValidationError listing
// every problem with the JSON Pointer of its member, such as
// `invalid answer: 1 violation: /decision: enum: is "approve" or "deny"`:
// the inbox page shows it to the approver as it is.
func decodeAnswer(b []byte) (inboxAnswer, error) {
	return decodeChecked[inboxAnswer](b, "answer", errAnswer)
}

// checked is a request body whose check says what its members' types
// cannot.
type checked interface{ check() []violation.Violation }

// decodeChecked reads b into a T with the strict reader, then runs T's
// check: a member already refused, or a body refused as a whole (path
// ""), is not checked further. A refusal wraps sentinel and is a
// *violation.ValidationError, what naming the body ("answer"), listing
// every problem with the JSON Pointer of its member. The inbox's
// answers, declassifications and re-pins are read so.
func decodeChecked[T checked](b []byte, what string, sentinel error) (T, error) {
	var v, zero T
	var vs []violation.Violation
	if err := strictjson.Unmarshal(b, &v); err != nil {
		var se *strictjson.Error
		if !errors.As(err, &se) {
			return zero, violation.New("", what, []violation.Violation{{Rule: violation.RuleSyntax, Message: err.Error()}}, sentinel)
		}
		vs = se.Violations()
	}
	reported := make(map[string]bool, len(vs))
	for _, x := range vs {
		reported[x.Path] = true
	}
	if !reported[""] {
		for _, x := range v.check() {
			if !reported[x.Path] {
				vs = append(vs, x)
			}
		}
	}
	if err := violation.New("", what, vs, sentinel); err != nil {
		return zero, err
	}
	return v, nil
}

// check returns what the members' types cannot say. The strict reader
// has made every string valid UTF-8 already.
func (a inboxAnswer) check() []violation.Violation {
	var vs []violation.Violation
	switch {
	case a.ID == "" || len(a.ID) > maxAnswerID:
		vs = append(vs, violation.Violation{Path: "/id", Rule: answerRuleLength, Message: fmt.Sprintf("%d bytes, want 1 to %d", len(a.ID), maxAnswerID)})
	case strings.ContainsFunc(a.ID, func(r rune) bool { return r <= ' ' || r >= 0x7f }):
		vs = append(vs, violation.Violation{Path: "/id", Rule: answerRuleCharacter, Message: "a character outside printable ASCII, or a space"})
	}
	if a.Decision != decisionApprove && a.Decision != decisionDeny {
		vs = append(vs, violation.Violation{Path: "/decision", Rule: answerRuleEnum, Message: fmt.Sprintf("is %q or %q", decisionApprove, decisionDeny)})
	}
	switch {
	case len(a.Reason) > maxAnswerReason:
		vs = append(vs, violation.Violation{Path: "/reason", Rule: answerRuleLength, Message: fmt.Sprintf("%d bytes, at most %d", len(a.Reason), maxAnswerReason)})
	case strings.ContainsFunc(a.Reason, hiddenInReason):
		vs = append(vs, violation.Violation{Path: "/reason", Rule: answerRuleCharacter, Message: "a control, format, line or paragraph separator character"})
	}
	return vs
}

// hiddenInReason reports whether r may not appear in a reason: a control,
// format (such as U+202E, which reverses the text after it), line or
// paragraph separator character.
func hiddenInReason(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}
