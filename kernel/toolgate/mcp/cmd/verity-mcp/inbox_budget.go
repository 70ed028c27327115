package main

//lint:file-ignore SA5008 internal/strictjson reads these structs: its tag option "optional" (a member that may be absent) is one staticcheck does not know, and strictjson refuses an unknown option itself

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
)

// POST /api/budget: an approver grants a caller more budget for the
// current period, or resets it (Gate.Grant), through the process that
// holds the log (the log file has one writer: `verity budget grant
// -inbox URL` is this route's client). It is authenticated as the rest
// of /api/: with -jwks the token's principal must answer for one of the
// policy's approvers (by key or group); without, the change is made as
// -approver. The entry on the log names who and why.

// budgetChange is the body of POST /api/budget.
type budgetChange struct {
	Caller string `json:"caller"`
	Action string `json:"action"`
	Amount string `json:"amount,optional"`
	Reason string `json:"reason"`
}

// budgetResult is what POST /api/budget returns.
type budgetResult struct {
	Caller string `json:"caller,omitempty"`
	Action string `json:"action,omitempty"`
	Amount string `json:"amount,omitempty"`
	By     string `json:"by,omitempty"`
	Error  string `json:"error,omitempty"`
}

// errBudgetChange is every refusal of decodeBudgetChange.
var errBudgetChange = errors.New("malformed budget change")

// maxBudgetCaller bounds a caller key in a budget change.
const maxBudgetCaller = 1024

// decodeBudgetChange reads a budget change with the strict reader
// (internal/strictjson: one JSON object, exactly the members caller,
// action, reason and, for a grant, amount; no member twice; strings
// only), then checks it: caller 1 to 1024 bytes without control
// characters, action "grant" or "reset", a grant's amount an exact
// positive decimal ("2.5") and a reset without one, reason 1 to 1000
// bytes without control, format, line or paragraph separator
// characters. A refusal wraps errBudgetChange and lists every problem
// with its JSON Pointer.
func decodeBudgetChange(b []byte) (budgetChange, kernel.Cost, error) {
	var c budgetChange
	var vs []violation.Violation
	if err := strictjson.Unmarshal(b, &c); err != nil {
		var se *strictjson.Error
		if !errors.As(err, &se) {
			return budgetChange{}, 0, violation.New("", "budget change", []violation.Violation{{Rule: violation.RuleSyntax, Message: err.Error()}}, errBudgetChange)
		}
		vs = se.Violations()
	}
	reported := make(map[string]bool, len(vs))
	for _, v := range vs {
		reported[v.Path] = true
	}
	var amount kernel.Cost
	add := func(path, rule, format string, args ...any) {
		if !reported[path] && !reported[""] {
			vs = append(vs, violation.Violation{Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
		}
	}
	switch {
	case c.Caller == "" || len(c.Caller) > maxBudgetCaller:
		add("/caller", answerRuleLength, "%d bytes, want 1 to %d", len(c.Caller), maxBudgetCaller)
	case strings.ContainsFunc(c.Caller, hiddenInReason):
		add("/caller", answerRuleCharacter, "a control, format, line or paragraph separator character")
	}
	switch c.Action {
	case "grant":
		a, err := kernel.ParseCost(c.Amount)
		switch {
		case c.Amount == "":
			add("/amount", violation.RuleRequired, "a grant names the amount it adds")
		case err != nil:
			add("/amount", "cost", "%q is not an exact amount such as \"2.5\"", c.Amount)
		case a <= 0:
			add("/amount", "cost", "a grant adds a positive amount, got %s", a)
		default:
			amount = a
		}
	case "reset":
		if c.Amount != "" {
			add("/amount", "cost", "a reset gives the whole budget back and takes no amount")
		}
	default:
		add("/action", answerRuleEnum, "is %q or %q", "grant", "reset")
	}
	switch {
	case strings.TrimSpace(c.Reason) == "" || len(c.Reason) > maxAnswerReason:
		add("/reason", answerRuleLength, "%d bytes, want 1 to %d, not only spaces: the log says why", len(c.Reason), maxAnswerReason)
	case strings.ContainsFunc(c.Reason, hiddenInReason):
		add("/reason", answerRuleCharacter, "a control, format, line or paragraph separator character")
	}
	if err := violation.New("", "budget change", vs, errBudgetChange); err != nil {
		return budgetChange{}, 0, err
	}
	return c, amount, nil
}

// budget serves POST /api/budget.
func (in *inbox) budget(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		writeJSON(w, http.StatusForbidden, budgetResult{Error: "cross-origin request"})
		return
	}
	if mt, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(mt), "application/json") {
		writeJSON(w, http.StatusUnsupportedMediaType, budgetResult{Error: "a budget change is application/json"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAnswerBytes))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, budgetResult{Error: fmt.Sprintf("a budget change is at most %d bytes", maxAnswerBytes)})
		return
	}
	c, amount, err := decodeBudgetChange(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, budgetResult{Error: err.Error()})
		return
	}
	gr := toolgate.BudgetGrant{Caller: c.Caller, Amount: amount, Reset: c.Action == "reset", Reason: c.Reason}
	who := in.approver
	if p, authed := in.principal(r); authed {
		gr.By, who = &p, p.Key()
	} else {
		gr.Approver = in.approver
	}
	res := budgetResult{Caller: c.Caller, Action: c.Action, Amount: c.Amount, By: who}
	err = in.gate.Grant(context.WithoutCancel(r.Context()), gr) // a change made is recorded
	switch {
	case errors.Is(err, toolgate.ErrNotAnApprover):
		in.logger.Warn("approval inbox: refused budget change", "caller", c.Caller, "by", who, "err", err)
		res.Error = "not one of the policy's approvers: only an approver may change a budget"
		writeJSON(w, http.StatusForbidden, res)
	case errors.Is(err, toolgate.ErrUnknownCall):
		res.Error = fmt.Sprintf("caller %q has made no call: nothing to grant", c.Caller)
		writeJSON(w, http.StatusNotFound, res)
	case errors.Is(err, toolgate.ErrInvalidGrant):
		res.Error = err.Error()
		writeJSON(w, http.StatusConflict, res)
	case err != nil:
		in.logger.Error("approval inbox: recording a budget change", "caller", c.Caller, "by", who, "err", err)
		res.Error = "the budget change could not be recorded"
		writeJSON(w, http.StatusInternalServerError, res)
	default:
		in.logger.Info("approval inbox: budget change", "caller", c.Caller, "by", who, "action", c.Action, "amount", c.Amount)
		writeJSON(w, http.StatusOK, res)
	}
}
