package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/verity-go/verity/internal/violation"
	"github.com/verity-go/verity/kernel/toolgate"
)

// Clearing a flow label at the inbox: POST /api/declassify
// {"caller", "label", "reason"} clears the label from the caller's
// session (toolgate.Gate.Declassify), recorded on the log as a
// toolgate.declassify entry naming who and why. It is answered as
// /api/answer is: authenticated the same way, a JSON POST of the same
// origin, by an approver of the policy (the token's principal, or
// -approver without -jwks) — 403 otherwise; 404 when the caller's
// session does not carry the label; 400 with every problem for a
// malformed body (decodeDeclassify).

// Bounds of a declassification's members.
const (
	maxDeclassifyCaller = 512
	maxDeclassifyReason = 1000
)

// declassifyLabel is a policy label's form (toolgate.Policy.Labels).
var declassifyLabel = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.:-]{0,63}$`)

// errDeclassify is every refusal of decodeDeclassify.
var errDeclassify = errors.New("malformed declassification")

// inboxDeclassify is the body of POST /api/declassify.
type inboxDeclassify struct {
	Caller string `json:"caller"`
	Label  string `json:"label"`
	Reason string `json:"reason"`
}

// declassifyResult is what POST /api/declassify returns.
type declassifyResult struct {
	Caller string `json:"caller"`
	Label  string `json:"label"`
	Error  string `json:"error,omitempty"`
}

// decodeDeclassify reads a declassification as decodeAnswer reads an
// answer: one strict JSON object with exactly caller, label and reason,
// all strings; caller 1 to 512 bytes and reason 1 to 1000, neither with
// a control, format, line or paragraph separator character; label a
// policy label (^[A-Za-z][A-Za-z0-9_.:-]{0,63}$). A refusal wraps
// errDeclassify and lists every problem at its member's JSON Pointer.
func decodeDeclassify(b []byte) (inboxDeclassify, error) {
	return decodeChecked[inboxDeclassify](b, "declassification", errDeclassify)
}

func (d inboxDeclassify) check() []violation.Violation {
	var vs []violation.Violation
	text := func(at, s string, most int) {
		switch {
		case s == "" || len(s) > most:
			vs = append(vs, violation.Violation{Path: at, Rule: answerRuleLength, Message: fmt.Sprintf("%d bytes, want 1 to %d", len(s), most)})
		case strings.ContainsFunc(s, hiddenInReason):
			vs = append(vs, violation.Violation{Path: at, Rule: answerRuleCharacter, Message: "a control, format, line or paragraph separator character"})
		}
	}
	text("/caller", d.Caller, maxDeclassifyCaller)
	if !declassifyLabel.MatchString(d.Label) {
		vs = append(vs, violation.Violation{Path: "/label", Rule: answerRuleCharacter, Message: "not a label (" + declassifyLabel.String() + ")"})
	}
	text("/reason", d.Reason, maxDeclassifyReason)
	return vs
}

// declassify serves POST /api/declassify.
func (in *inbox) declassify(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		writeJSON(w, http.StatusForbidden, declassifyResult{Error: "cross-origin request"})
		return
	}
	if mt, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(mt), "application/json") {
		writeJSON(w, http.StatusUnsupportedMediaType, declassifyResult{Error: "a declassification is application/json"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAnswerBytes))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, declassifyResult{Error: fmt.Sprintf("a declassification is at most %d bytes", maxAnswerBytes)})
		return
	}
	d, err := decodeDeclassify(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, declassifyResult{Error: err.Error()})
		return
	}
	res := declassifyResult{Caller: d.Caller, Label: d.Label}
	p, authed := in.principal(r)
	ctx := context.WithoutCancel(r.Context()) // a declassification given is recorded
	who := in.approver
	if authed {
		who = p.Key()
		err = in.gate.Declassify(ctx, d.Caller, d.Label, "", &p, d.Reason)
	} else {
		err = in.gate.Declassify(ctx, d.Caller, d.Label, in.approver, nil, d.Reason)
	}
	switch {
	case errors.Is(err, toolgate.ErrNotAnApprover):
		in.logger.Warn("approval inbox: refused declassification", "caller", d.Caller, "label", d.Label, "by", who, "err", err)
		res.Error = "only an approver of the policy may clear a label"
		writeJSON(w, http.StatusForbidden, res)
		return
	case errors.Is(err, toolgate.ErrNotCarried):
		res.Error = "the caller's session does not carry this label"
		writeJSON(w, http.StatusNotFound, res)
		return
	case err != nil:
		in.logger.Error("approval inbox: recording a declassification", "caller", d.Caller, "label", d.Label, "by", who, "err", err)
		res.Error = "the declassification could not be recorded"
		writeJSON(w, http.StatusInternalServerError, res)
		return
	}
	in.logger.Info("approval inbox: declassified", "caller", d.Caller, "label", d.Label, "by", who)
	writeJSON(w, http.StatusOK, res)
}
