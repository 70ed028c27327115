package main

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/httpguard"
	"github.com/verity-go/verity/kernel/toolgate"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/kernel/toolgate/mcp/bearer"
)

// The approval inbox (-approvals ADDR): a page that lists the requests
// waiting for a human and answers them, for clients that cannot ask
// their human (no form elicitation) and for approvers who are not at the
// client.
//
// Routes:
//
//	GET  /            the page (inbox.html), GET /inbox.js, /inbox.css
//	GET  /api/requests  the waiting requests and who asks (JSON)
//	POST /api/answer    {"id", "decision": "approve"|"deny", "reason"}
//	                    (decodeAnswer; a refused body is 400 with every problem)
//	POST /api/budget    {"caller", "action": "grant"|"reset", "amount", "reason"}:
//	                    an approver changes a budget that renews (inbox_budget.go)
//	POST /api/declassify {"caller", "label", "reason"}: an approver clears
//	                    a flow label (inbox_labels.go)
//
// The page and its two files hold no data and are served to anyone who
// reaches the address; /api/ is authenticated as -http is: with -jwks,
// a bearer token in the Authorization header (the page's script sends
// the token its user pasted; a browser never sends one by itself, so a
// page of another site cannot answer for them), and the answer is
// recorded as the token's principal (Gate.ApproveAs, Gate.DenyAs: an
// approver named by the policy, by key or "group:" and a group of the
// token). Without -jwks the inbox binds loopback addresses only (unless
// -approvals-insecure-no-auth), answers as -approver, and refuses any
// request whose Host is not the address it listens on (a page of another
// site that rebinds its name to 127.0.0.1 is refused). Every answer must
// be a JSON POST: a form of another site can send neither that content
// type nor the token.

//go:embed web
var inboxFiles embed.FS

// inboxCSP is the page's Content-Security-Policy: its own script, style
// and API, nothing else — no inline script, no frames, no forms posted
// anywhere.
const inboxCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// maxAnswerBytes bounds an answer's body.
const maxAnswerBytes = 16 << 10

// inboxConfig is -approvals and its flag.
type inboxConfig struct {
	addr           string
	insecureNoAuth bool
}

func addInboxFlags(fs *flag.FlagSet, ic *inboxConfig) {
	fs.StringVar(&ic.addr, "approvals", "", "serve the approval inbox (a page listing the calls that wait for a human, to approve or deny them) at this address (host:port); authenticated as -http is")
	fs.BoolVar(&ic.insecureNoAuth, "approvals-insecure-no-auth", false, "allow -approvals on a non-loopback address without -jwks, so anyone who reaches it may answer as -approver")
}

func (ic inboxConfig) enabled() bool { return ic.addr != "" }

// check reads -approvals against the authentication flags.
func (ic inboxConfig) check(a authConfig) error {
	switch {
	case !ic.enabled():
		if ic.insecureNoAuth {
			return errors.New("-approvals-insecure-no-auth needs -approvals")
		}
	case a.enabled() && ic.insecureNoAuth:
		return errors.New("-approvals-insecure-no-auth and -jwks exclude each other")
	case !a.enabled() && !ic.insecureNoAuth && !loopback(ic.addr):
		return fmt.Errorf("-approvals %s is not a loopback address: give -jwks (with -http, -issuer and -resource) to require tokens, or -approvals-insecure-no-auth to let anyone who reaches it answer", ic.addr)
	}
	return nil
}

// inbox serves the approval inbox over a gate.
type inbox struct {
	gate      *toolgate.Gate
	approvers map[claims.RiskTier][]string // the policy's, for the page
	approver  string                       // without authentication: who answers
	verifier  *bearer.Verifier             // nil without authentication
	resource  bearer.Resource
	logger    *slog.Logger
	hosts     map[string]bool // without authentication: the Host values accepted
	pins      *gatemcp.Pins   // the drifted tools to re-pin (inbox_pins.go); nil without pinning
	shared    *sharedInbox    // with -db: every replica's requests (inbox_shared.go); nil without
}

// inboxRequest is a waiting request as the page shows it.
type inboxRequest struct {
	ID        string    `json:"id"`
	Caller    string    `json:"caller"`
	Tool      string    `json:"tool"`
	Tier      string    `json:"tier"`
	Arguments string    `json:"arguments"`
	Question  string    `json:"question"`
	Approvers []string  `json:"approvers"` // every approver the tier needs
	Awaiting  []string  `json:"awaiting"`  // those who have not answered
	Approved  []string  `json:"approved"`  // Approvers less Awaiting, one for each approval given
	Given     int       `json:"given"`     // approvals given: "Given of Needed approvals"
	Needed    int       `json:"needed"`    // approvals the call needs (a k-of-n group counts k)
	Asked     time.Time `json:"asked"`
	Expires   string    `json:"expires,omitempty"`
	CanAnswer bool      `json:"can_answer"`        // the asking principal is one of Awaiting
	Replica   string    `json:"replica,omitempty"` // with shared approvals: the replica holding the call
}

type inboxList struct {
	You      string         `json:"you"`
	Auth     bool           `json:"auth"`
	Requests []inboxRequest `json:"requests"`
}

// answerResult is what POST /api/answer returns.
type answerResult struct {
	ID       string   `json:"id"`
	Decision string   `json:"decision"`
	Granted  bool     `json:"granted"`
	Awaiting []string `json:"awaiting"`
	Error    string   `json:"error,omitempty"`
}

// handler returns the inbox's routes, /api/ authenticated.
func (in *inbox) handler() (http.Handler, error) {
	api := http.NewServeMux()
	api.HandleFunc("GET /api/requests", in.list)
	api.HandleFunc("POST /api/answer", in.answer)
	api.HandleFunc("POST /api/budget", in.budget)         // inbox_budget.go
	api.HandleFunc("POST /api/declassify", in.declassify) // inbox_labels.go
	var protected http.Handler = api
	if in.verifier != nil {
		var err error
		if protected, err = bearer.Protect(api, in.verifier, in.resource); err != nil {
			return nil, err
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", protected)
	mux.HandleFunc("GET /{$}", in.file("web/inbox.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /inbox.js", in.file("web/inbox.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /page.js", in.file("web/page.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /inbox.css", in.file("web/inbox.css", "text/css; charset=utf-8"))
	in.routePins(api, mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", inboxCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if in.hosts != nil && !in.hosts[r.Host] {
			http.Error(w, "unexpected Host", http.StatusMisdirectedRequest)
			return
		}
		mux.ServeHTTP(w, r)
	}), nil
}

func (in *inbox) file(name, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := inboxFiles.ReadFile(name)
		if err != nil {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(b)
	}
}

// principal returns who asks: the token's principal with -jwks, else
// nobody (answers are -approver's).
func (in *inbox) principal(r *http.Request) (toolgate.Principal, bool) {
	if in.verifier == nil {
		return toolgate.Principal{}, false
	}
	ti := auth.TokenInfoFromContext(r.Context())
	if ti == nil {
		return toolgate.Principal{}, false
	}
	p := toolgate.Principal{Subject: ti.UserID, Scopes: slices.Clone(ti.Scopes)}
	if iss, ok := ti.Extra["iss"].(string); ok {
		p.Issuer = iss
	}
	if groups, ok := ti.Extra["groups"].([]string); ok {
		p.Groups = slices.Clone(groups)
	}
	return p, true
}

// answersFor reports whether the asker is one of awaiting.
func (in *inbox) answersFor(p toolgate.Principal, authed bool, awaiting []string) bool {
	if !authed {
		return slices.Contains(awaiting, in.approver)
	}
	key := p.Key()
	for _, name := range awaiting {
		if name == key {
			return true
		}
		if g, ok := strings.CutPrefix(name, toolgate.GroupPrefix); ok && slices.Contains(p.Groups, g) {
			return true
		}
	}
	return false
}

func (in *inbox) list(w http.ResponseWriter, r *http.Request) {
	if _, err := in.gate.ExpireApprovals(r.Context()); err != nil {
		in.logger.Error("approval inbox: expiring approvals", "err", err)
	}
	p, authed := in.principal(r)
	out := inboxList{Auth: in.verifier != nil, Requests: []inboxRequest{}}
	if authed {
		out.You = p.Key()
	} else {
		out.You = in.approver
	}
	if in.shared != nil {
		in.listShared(w, r, p, authed, out) // inbox_shared.go
		return
	}
	for _, req := range in.gate.Pending() {
		ir := inboxRequest{ID: req.ID, Caller: req.Caller, Tool: req.Tool, Tier: string(req.Tier), Arguments: req.Arguments,
			Question: req.Question, Approvers: slices.Clone(in.approvers[req.Tier]), Awaiting: req.Awaiting, Asked: req.Asked,
			CanAnswer: in.answersFor(p, authed, req.Awaiting)}
		if ir.Approvers == nil {
			ir.Approvers = []string{toolgate.DefaultApprover}
		}
		ir.Approved, ir.Needed = approvedOf(ir.Approvers, ir.Awaiting), len(ir.Approvers)
		ir.Given = len(ir.Approved)
		if !req.Expires.IsZero() {
			ir.Expires = req.Expires.UTC().Format(time.RFC3339)
		}
		out.Requests = append(out.Requests, ir)
	}
	writeJSON(w, http.StatusOK, out)
}

func (in *inbox) answer(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		writeJSON(w, http.StatusForbidden, answerResult{Error: "cross-origin request"})
		return
	}
	if mt, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(mt), "application/json") {
		writeJSON(w, http.StatusUnsupportedMediaType, answerResult{Error: "an answer is application/json"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAnswerBytes))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, answerResult{Error: fmt.Sprintf("an answer is at most %d bytes", maxAnswerBytes)})
		return
	}
	a, err := decodeAnswer(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, answerResult{Error: err.Error()})
		return
	}
	p, authed := in.principal(r)
	if in.shared != nil {
		in.answerShared(w, r, a, p, authed) // inbox_shared.go
		return
	}
	res := answerResult{ID: a.ID, Decision: a.Decision}
	ctx := context.WithoutCancel(r.Context()) // an answer given is recorded
	var granted bool
	switch {
	case authed && a.Decision == decisionApprove:
		granted, err = in.gate.ApproveAs(ctx, a.ID, p, a.Reason)
	case authed:
		err = in.gate.DenyAs(ctx, a.ID, p, a.Reason)
	default:
		// Without tokens the inbox answers as -approver, and only for
		// requests that wait for it.
		if !slices.ContainsFunc(in.gate.Pending(), func(q toolgate.ApprovalRequest) bool {
			return q.ID == a.ID && slices.Contains(q.Awaiting, in.approver)
		}) {
			if slices.ContainsFunc(in.gate.Pending(), func(q toolgate.ApprovalRequest) bool { return q.ID == a.ID }) {
				err = fmt.Errorf("%w: %q", toolgate.ErrNotAnApprover, in.approver)
			} else {
				err = fmt.Errorf("%w: %q", toolgate.ErrUnknownApproval, a.ID)
			}
		} else if a.Decision == decisionApprove {
			granted, err = in.gate.Approve(ctx, a.ID, in.approver, a.Reason)
		} else {
			err = in.gate.Deny(ctx, a.ID, in.approver, a.Reason)
		}
	}
	who := in.approver
	if authed {
		who = p.Key()
	}
	switch {
	case errors.Is(err, toolgate.ErrSelfApproval):
		in.logger.Warn("approval inbox: refused answer", "approval", a.ID, "by", who, "decision", a.Decision, "err", err)
		res.Error = "the principal that made a PRIVILEGE call cannot approve it: another approver must"
		writeJSON(w, http.StatusForbidden, res)
		return
	case errors.Is(err, toolgate.ErrNotAnApprover), errors.Is(err, claims.ErrAlreadyDecided), errors.Is(err, claims.ErrNotRequired):
		in.logger.Warn("approval inbox: refused answer", "approval", a.ID, "by", who, "decision", a.Decision, "err", err)
		res.Error = "not an approver of this request (or answered it already)"
		writeJSON(w, http.StatusForbidden, res)
		return
	case errors.Is(err, toolgate.ErrUnknownApproval):
		res.Error = "no such request waits (decided, expired, or never asked)"
		writeJSON(w, http.StatusNotFound, res)
		return
	case err != nil:
		in.logger.Error("approval inbox: recording an answer", "approval", a.ID, "by", who, "err", err)
		res.Error = "the answer could not be recorded"
		writeJSON(w, http.StatusInternalServerError, res)
		return
	}
	res.Granted = granted
	res.Awaiting = []string{}
	for _, q := range in.gate.Pending() {
		if q.ID == a.ID {
			res.Awaiting = q.Awaiting
		}
	}
	in.logger.Info("approval inbox: answer", "approval", a.ID, "by", who, "decision", a.Decision, "granted", granted, "awaiting", res.Awaiting)
	writeJSON(w, http.StatusOK, res)
}

// approvedOf is approvers less awaiting, as multisets: a group named k
// times (k-of-n) and awaited j times was approved k−j times.
func approvedOf(approvers, awaiting []string) []string {
	left := slices.Clone(awaiting)
	out := []string{}
	for _, a := range approvers {
		if i := slices.Index(left, a); i >= 0 {
			left = slices.Delete(left, i, i+1)
			continue
		}
		out = append(out, a)
	}
	return out
}

// sameOrigin refuses a request a browser marks as sent by another site:
// Sec-Fetch-Site other than same-origin or none, or an Origin whose host
// is not the request's Host.
func sameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		_, host, ok := strings.Cut(o, "://")
		return ok && strings.EqualFold(host, r.Host)
	}
	return true
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// serveInbox serves the inbox on ln, opened for addr (bounded as every
// HTTP server of the project: httpguard), and sweeps expired approvals
// every sweep until stop is called.
func serveInbox(ln net.Listener, addr string, in *inbox, limits httpguard.Limits, sweep time.Duration, logger *slog.Logger) (stop func(context.Context) error, err error) {
	if in.verifier == nil {
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		in.hosts = map[string]bool{ln.Addr().String(): true, "localhost:" + port: true, "127.0.0.1:" + port: true, "[::1]:" + port: true}
		if host, _, err := net.SplitHostPort(addr); err == nil && host != "" {
			in.hosts[net.JoinHostPort(host, port)] = true
		}
	}
	h, err := in.handler()
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("-approvals: %w", err)
	}
	hs, gl := httpguard.New(ln, h, limits)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(gl) }()
	sweepDone, stopSweep := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sweepDone)
		t := time.NewTicker(sweep)
		defer t.Stop()
		for {
			select {
			case <-stopSweep:
				return
			case <-t.C:
				if n, err := in.gate.ExpireApprovals(context.Background()); err != nil {
					logger.Error("approval inbox: expiring approvals", "err", err)
				} else if n > 0 {
					logger.Info("approval inbox: expired", "n", n)
				}
			}
		}
	}()
	logger.Info("approval inbox", "url", "http://"+ln.Addr().String()+"/", "auth", in.verifier != nil)
	return func(ctx context.Context) error {
		close(stopSweep)
		<-sweepDone
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		if herr := <-done; herr != nil && !errors.Is(herr, http.ErrServerClosed) {
			return fmt.Errorf("-approvals: %w", herr)
		}
		return nil
	}, nil
}

// defaultApprovalTimeout is how long, with -approvals, a call whose
// approval its client cannot give is held for an answer at the inbox
// when the policy has no approval_timeout (at most its approval_ttl).
const defaultApprovalTimeout = 5 * time.Minute

// withDefaultTimeout gives a policy without approval_timeout the default
// one when -approvals is set, so that the inbox works out of the box:
// calls wait for it rather than being refused at once.
func (ic inboxConfig) withDefaultTimeout(p toolgate.Policy, comp *toolgate.Compiled) (toolgate.Policy, *toolgate.Compiled, error) {
	if !ic.enabled() || p.ApprovalTimeout != 0 {
		return p, comp, nil
	}
	p.ApprovalTimeout = defaultApprovalTimeout
	if p.ApprovalTTL > 0 {
		p.ApprovalTimeout = min(p.ApprovalTimeout, p.ApprovalTTL)
	}
	comp, err := p.Compile()
	return p, comp, err
}

// listen opens -approvals' listener (nil without -approvals) and returns
// the inbox's URL, which refusals name.
func (ic inboxConfig) listen() (net.Listener, string, error) {
	if !ic.enabled() {
		return nil, "", nil
	}
	ln, err := net.Listen("tcp", ic.addr)
	if err != nil {
		return nil, "", fmt.Errorf("-approvals: %w", err)
	}
	return ln, "http://" + ln.Addr().String() + "/", nil
}

// startInbox serves -approvals over gate on ln (inboxConfig.listen),
// with -http's authentication and bounds.
func startInbox(c config, ln net.Listener, cfg toolgate.Policy, gate *toolgate.Gate, pins *gatemcp.Pins, logger *slog.Logger) (func(context.Context) error, error) {
	in := &inbox{gate: gate, approvers: cfg.Approvers, approver: c.approver, logger: logger, pins: pins}
	if c.auth.enabled() {
		in.verifier = c.auth.verifier
		in.resource = bearer.Resource{URL: c.auth.resource, AuthorizationServers: []string{c.auth.issuer}, Scopes: c.auth.scopeList()}
	}
	sweep := time.Minute
	if ttl := cfg.ApprovalTTL; ttl > 0 && ttl/10 < sweep {
		sweep = max(ttl/10, time.Second)
	}
	if c.db == "" {
		return serveInbox(ln, c.inbox.addr, in, c.httpConfig.limits, sweep, logger)
	}
	shared, stopShared, err := startShared(c, cfg, gate, logger) // inbox_shared.go
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	in.shared = shared
	stop, err := serveInbox(ln, c.inbox.addr, in, c.httpConfig.limits, sweep, logger)
	if err != nil {
		stopShared()
		return nil, err
	}
	return func(ctx context.Context) error { defer stopShared(); return stop(ctx) }, nil
}
