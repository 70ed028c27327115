package main

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
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

// errAnswer is every refusal of decodeAnswer.
var errAnswer = errors.New("malformed answer")

// inboxAnswer is the body of POST /api/answer.
type inboxAnswer struct {
	ID       string `json:"id"`
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

// decodeAnswer reads an answer strictly: one JSON object (no duplicate
// member, valid UTF-8: canon.Decode) with exactly the members id and
// decision and optionally reason, all strings; id 1 to 128 printable
// characters without spaces, decision "approve" or "deny", reason at
// most 1000 bytes without control, format, line or paragraph
// separator characters (a reason is
// recorded on the log and shown to people: it may not hide text).
func decodeAnswer(b []byte) (inboxAnswer, error) {
	var a inboxAnswer
	if err := canon.DecodeInto(b, &a, true); err != nil {
		return inboxAnswer{}, fmt.Errorf("%w: %v", errAnswer, err)
	}
	tree, err := canon.Decode(b)
	if err != nil {
		return inboxAnswer{}, fmt.Errorf("%w: %v", errAnswer, err)
	}
	m, ok := tree.(map[string]any)
	if !ok {
		return inboxAnswer{}, fmt.Errorf("%w: not a JSON object", errAnswer)
	}
	for _, k := range []string{"id", "decision"} {
		if _, ok := m[k]; !ok {
			return inboxAnswer{}, fmt.Errorf("%w: no %q", errAnswer, k)
		}
	}
	for k, v := range m {
		if _, ok := v.(string); !ok {
			return inboxAnswer{}, fmt.Errorf("%w: %q is not a string", errAnswer, k)
		}
	}
	switch {
	case a.ID == "" || len(a.ID) > maxAnswerID:
		return inboxAnswer{}, fmt.Errorf("%w: id of %d bytes, 1 to %d", errAnswer, len(a.ID), maxAnswerID)
	case strings.ContainsFunc(a.ID, func(r rune) bool { return r <= ' ' || r >= 0x7f }):
		return inboxAnswer{}, fmt.Errorf("%w: id with a character outside printable ASCII", errAnswer)
	case a.Decision != decisionApprove && a.Decision != decisionDeny:
		return inboxAnswer{}, fmt.Errorf("%w: decision is %q or %q", errAnswer, decisionApprove, decisionDeny)
	case len(a.Reason) > maxAnswerReason:
		return inboxAnswer{}, fmt.Errorf("%w: reason of %d bytes, at most %d", errAnswer, len(a.Reason), maxAnswerReason)
	case !utf8.ValidString(a.Reason):
		return inboxAnswer{}, fmt.Errorf("%w: reason is not UTF-8", errAnswer)
	case strings.ContainsFunc(a.Reason, func(r rune) bool { return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) }):
		return inboxAnswer{}, fmt.Errorf("%w: reason with a control or format character", errAnswer)
	}
	return a, nil
}
