package main

//lint:file-ignore SA5008 internal/strictjson reads these structs: its tag option "optional" (a member that may be absent) is one staticcheck does not know, and strictjson refuses an unknown option itself

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/violation"
	"github.com/verity-go/verity/kernel/toolgate/pin"
)

// Re-pinning at the approval inbox: a tool whose listed definition is
// not its pinned one (changed, or new) is listed at /pins with the diff
// of its two definitions (pin.Compare: invisible and look-alike
// characters written as visible escapes, never drawn) and its warnings;
// an approver re-pins it there, or with `verity-mcp pin approve`.
//
// Routes (beside the inbox's own, authenticated as they are):
//
//	GET  /pins          the page (pins.html), GET /pins.js, /pins.css
//	GET  /api/pins      the drifted tools, each with its review (JSON)
//	POST /api/repin     {"tool", "pinned", "seen", "reason"}
//	                    (decodeRepin; a refused body is 400 with every problem)
//
// Who may re-pin is who may answer a call: with -jwks the token's
// principal, recorded by its key, who must be an approver the policy
// names (for any tier: by key, or "group:" and one of the token's
// groups); without, -approver. The principal whose call was refused on
// the tool may not re-pin it (pin.ErrSelfApproval: 403). A re-pin names
// the two hashes the approver reviewed: if the server lists another
// definition meanwhile, or the pin moved, it is refused (409) and
// nothing is recorded.

// maxRepinTool bounds a re-pin's tool name.
const maxRepinTool = 1024

// pinReview is a drifted tool as the page shows it.
type pinReview struct {
	Server   string   `json:"server"`
	Tool     string   `json:"tool"`
	Change   string   `json:"change"`
	Pinned   string   `json:"pinned"`
	Seen     string   `json:"seen"`
	HTML     string   `json:"html"` // pin.Review.HTML: escaped, no script
	Text     string   `json:"text"` // pin.Review.Text, for a terminal
	Warnings []string `json:"warnings"`
	Asked    []string `json:"asked"`
	// CanApprove: the asker may re-pin it (an approver, not one who
	// asked, and the tool is listed: a removed tool has nothing to pin).
	CanApprove bool `json:"can_approve"`
}

type pinList struct {
	You     string      `json:"you"`
	Auth    bool        `json:"auth"`
	Pinning bool        `json:"pinning"`
	Reviews []pinReview `json:"reviews"`
}

// repinResult is what POST /api/repin returns.
type repinResult struct {
	Tool   string `json:"tool"`
	Pinned string `json:"pinned,omitempty"`
	Error  string `json:"error,omitempty"`
}

// routePins adds the re-pin routes: the API to api (authenticated), the
// page to mux.
func (in *inbox) routePins(api, mux *http.ServeMux) {
	api.HandleFunc("GET /api/pins", in.listPins)
	api.HandleFunc("POST /api/repin", in.repin)
	mux.HandleFunc("GET /pins", in.file("web/pins.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /pins.js", in.file("web/pins.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /pins.css", in.file("web/pins.css", "text/css; charset=utf-8"))
}

// repinner returns who asks to re-pin, and whether they may: with
// tokens, a principal the policy names as an approver of some tier;
// without, -approver.
func (in *inbox) repinner(r *http.Request) (who string, may bool) {
	p, authed := in.principal(r)
	if !authed {
		return in.approver, true
	}
	var names []string
	for _, ns := range in.approvers {
		names = append(names, ns...)
	}
	return p.Key(), in.answersFor(p, true, names)
}

func (in *inbox) listPins(w http.ResponseWriter, r *http.Request) {
	who, may := in.repinner(r)
	out := pinList{You: who, Auth: in.verifier != nil, Pinning: in.pins != nil, Reviews: []pinReview{}}
	if in.pins == nil {
		writeJSON(w, http.StatusOK, out)
		return
	}
	reviews := in.pins.Reviews()
	peers := in.pins.Tools()
	for _, rv := range reviews {
		pr := pinReview{Server: rv.Server, Tool: rv.Tool, Change: rv.Change, Pinned: rv.Pinned, Seen: rv.Seen,
			Asked: rv.Asked, Warnings: []string{}}
		if pr.Asked == nil {
			pr.Asked = []string{}
		}
		review, err := pin.Compare(rv.Old, rv.New, slices.DeleteFunc(slices.Clone(peers), func(n string) bool { return n == rv.Tool }))
		if err != nil {
			// A definition not at hand (a pin from before this process,
			// with no lock file holding it) is shown by its hash alone.
			review = pin.Review{Tool: rv.Tool, Old: rv.Pinned, New: rv.Seen}
			if rv.New != nil {
				review, _ = pin.Compare(nil, rv.New, nil)
				review.Old = rv.Pinned
			}
		}
		if rv.Old == nil && rv.Pinned != "" {
			review.Old = rv.Pinned
		}
		pr.HTML, pr.Text = review.HTML(), review.Text()
		for _, wn := range review.Warnings {
			pr.Warnings = append(pr.Warnings, wn.String())
		}
		pr.CanApprove = may && rv.Seen != "" && !slices.Contains(rv.Asked, who)
		out.Reviews = append(out.Reviews, pr)
	}
	writeJSON(w, http.StatusOK, out)
}

func (in *inbox) repin(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		writeJSON(w, http.StatusForbidden, repinResult{Error: "cross-origin request"})
		return
	}
	if mt, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(mt), "application/json") {
		writeJSON(w, http.StatusUnsupportedMediaType, repinResult{Error: "a re-pin is application/json"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAnswerBytes))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, repinResult{Error: fmt.Sprintf("a re-pin is at most %d bytes", maxAnswerBytes)})
		return
	}
	a, err := decodeRepin(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, repinResult{Error: err.Error()})
		return
	}
	res := repinResult{Tool: a.Tool}
	if in.pins == nil {
		res.Error = "this proxy pins no definitions (-pins off)"
		writeJSON(w, http.StatusNotFound, res)
		return
	}
	who, may := in.repinner(r)
	if !may {
		in.logger.Warn("approval inbox: refused re-pin", "tool", a.Tool, "by", who, "err", "not an approver")
		res.Error = "not an approver the policy names"
		writeJSON(w, http.StatusForbidden, res)
		return
	}
	err = in.pins.Repin(context.WithoutCancel(r.Context()), a.Tool, a.Pinned, a.Seen, who, a.Reason)
	switch {
	case errors.Is(err, pin.ErrSelfApproval):
		in.logger.Warn("approval inbox: refused re-pin", "tool", a.Tool, "by", who, "err", err)
		res.Error = "a principal whose call asked for this re-pin cannot approve it: another approver must"
		writeJSON(w, http.StatusForbidden, res)
		return
	case errors.Is(err, pin.ErrStaleApproval):
		in.logger.Warn("approval inbox: refused re-pin", "tool", a.Tool, "by", who, "err", err)
		res.Error = "the definitions changed since they were shown (or the tool is not drifted): review it again"
		writeJSON(w, http.StatusConflict, res)
		return
	case err != nil:
		in.logger.Error("approval inbox: recording a re-pin", "tool", a.Tool, "by", who, "err", err)
		res.Error = "the re-pin could not be recorded"
		writeJSON(w, http.StatusInternalServerError, res)
		return
	}
	res.Pinned = a.Seen
	in.logger.Info("approval inbox: re-pinned", "tool", a.Tool, "by", who, "pinned", a.Seen)
	writeJSON(w, http.StatusOK, res)
}

// inboxRepin is the body of POST /api/repin: the tool, the two hashes the
// approver reviewed (pinned "" for a new tool) and a reason.
type inboxRepin struct {
	Tool   string `json:"tool"`
	Pinned string `json:"pinned"`
	Seen   string `json:"seen"`
	Reason string `json:"reason,optional"`
}

// errRepin is every refusal of decodeRepin.
var errRepin = errors.New("malformed re-pin")

// decodeRepin reads a re-pin with the strict reader (as decodeAnswer
// does an answer) and checks it: tool 1 to 1024 bytes, pinned "" or a
// hash, seen a hash ("sha256:" and 64 lower-case hex digits), reason as
// an answer's (at most 1000 bytes, no control, format, line or paragraph
// separator character). A refusal wraps errRepin and lists every problem
// by its member's JSON Pointer.
func decodeRepin(b []byte) (inboxRepin, error) {
	return decodeChecked[inboxRepin](b, "re-pin", errRepin)
}

// The rule of a hash member that is not one.
const repinRuleHash = "hash"

func (a inboxRepin) check() []violation.Violation {
	var vs []violation.Violation
	if a.Tool == "" || len(a.Tool) > maxRepinTool || !utf8.ValidString(a.Tool) {
		vs = append(vs, violation.Violation{Path: "/tool", Rule: answerRuleLength, Message: fmt.Sprintf("%d bytes, want 1 to %d", len(a.Tool), maxRepinTool)})
	}
	if a.Pinned != "" && !pin.ValidHash(a.Pinned) {
		vs = append(vs, violation.Violation{Path: "/pinned", Rule: repinRuleHash, Message: `"" or "sha256:" and 64 lower-case hex digits`})
	}
	if !pin.ValidHash(a.Seen) {
		vs = append(vs, violation.Violation{Path: "/seen", Rule: repinRuleHash, Message: `"sha256:" and 64 lower-case hex digits`})
	}
	switch {
	case len(a.Reason) > maxAnswerReason:
		vs = append(vs, violation.Violation{Path: "/reason", Rule: answerRuleLength, Message: fmt.Sprintf("%d bytes, at most %d", len(a.Reason), maxAnswerReason)})
	case strings.ContainsFunc(a.Reason, hiddenInReason):
		vs = append(vs, violation.Violation{Path: "/reason", Rule: answerRuleCharacter, Message: "a control, format, line or paragraph separator character"})
	}
	return vs
}
