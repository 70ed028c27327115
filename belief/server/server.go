package server

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/internal/violation"
)

// DefaultMaxBodyBytes is the largest request body accepted (1 MiB); a
// larger body is answered 413 CONTENT_TOO_LARGE with details.limit_bytes.
const DefaultMaxBodyBytes = 1 << 20

// CodeNotFound and CodeMethodNotAllowed answer requests outside the API
// (an unknown path, a method the path does not serve); CodeContentTooLarge
// answers a body over the limit.
const (
	CodeNotFound         belief.Code = "NOT_FOUND"
	CodeMethodNotAllowed belief.Code = "METHOD_NOT_ALLOWED"
	CodeContentTooLarge  belief.Code = "CONTENT_TOO_LARGE"
)

// After answering an oversized HTTP/1 request, the handler reads and
// discards the rest of its body for at most drainBytes and drainTime
// (whichever ends first), so that a client that sends its whole body
// before reading gets the answer rather than a connection reset. At most
// maxDrains requests drain at once; beyond that the answer is sent
// without draining.
const (
	drainBytes = 64 << 20
	drainTime  = 5 * time.Second
	maxDrains  = 64
)

// HeaderIdempotentReplay is set to "true" on an ELIMINATE response that
// repeats the first response of its (source_id, observation_id) key.
const HeaderIdempotentReplay = "Idempotent-Replay"

// Handler serves the belief protocol over HTTP/JSON. Mount it at the root
// of a mux (its routes start with /v1/).
type Handler struct {
	b       *belief.Server
	mux     *http.ServeMux
	log     *slog.Logger
	maxBody int64
	auth    Authenticator // nil: anonymous

	drainBytes int64         // drainBytes, or less in tests
	drainTime  time.Duration // drainTime, or less in tests
	drains     chan struct{} // one token per drain under way (capacity maxDrains, or less in tests)
}

// Option configures a Handler.
type Option func(*Handler)

// WithLogger sets the logger for one line per request and for internal
// errors (default: discard).
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.log = l } }

// WithMaxBodyBytes sets the request body limit (default
// DefaultMaxBodyBytes).
func WithMaxBodyBytes(n int64) Option { return func(h *Handler) { h.maxBody = n } }

// route is one endpoint: the OpenAPI path, its one method, every status
// it can answer, and its handler. The mux is built from this table and
// the OpenAPI test compares api/openapi.yaml with it.
type route struct {
	method   string
	path     string
	statuses []int
	serve    func(h *Handler, w http.ResponseWriter, r *http.Request)
}

// Every route answers 401 to a request that does not authenticate when
// the Handler has an Authenticator (auth.go).
var mutating = []int{200, 400, 401, 404, 409, 412, 413, 500}

var routes = []route{
	{"POST", "/v1/sessions", []int{201, 400, 401, 413, 500}, (*Handler).declare},
	{"GET", "/v1/sessions/{session_id}", []int{200, 401, 404, 500}, (*Handler).snapshot},
	{"POST", "/v1/sessions/{session_id}/eliminate", mutating, (*Handler).eliminate},
	{"GET", "/v1/sessions/{session_id}/audit", []int{200, 400, 401, 404, 500}, (*Handler).audit},
	{"POST", "/v1/sessions/{session_id}/obligations", mutating, (*Handler).obligation},
	{"POST", "/v1/sessions/{session_id}/obligations/{obligation_id}/exit", mutating, (*Handler).exit},
	{"POST", "/v1/sessions/{session_id}/conclusions", mutating, (*Handler).conclusion},
	{"POST", "/v1/sessions/{session_id}/terminate", mutating, (*Handler).terminate},
}

// New returns a Handler over b.
func New(b *belief.Server, opts ...Option) *Handler {
	h := &Handler{b: b, mux: http.NewServeMux(), log: slog.New(slog.DiscardHandler), maxBody: DefaultMaxBodyBytes,
		drainBytes: drainBytes, drainTime: drainTime, drains: make(chan struct{}, maxDrains)}
	for _, o := range opts {
		o(h)
	}
	for _, rt := range routes {
		h.mux.HandleFunc(rt.path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != rt.method {
				w.Header().Set("Allow", rt.method)
				writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed,
					fmt.Sprintf("%s is not served on this path; use %s", r.Method, rt.method), nil)
				return
			}
			rt.serve(h, w, r)
		})
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, "no such endpoint", map[string]any{"path": r.URL.Path})
	})
	return h
}

// statusWriter remembers the status for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the server's writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// ServeHTTP implements http.Handler. A panic in a handler is answered 500
// with the error envelope and logged; the fuzz tests make sure there is
// none to catch.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	var who string // the authenticated principal's Key, for the log
	defer func() {
		if p := recover(); p != nil {
			h.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
			if sw.status == 0 {
				writeError(sw, http.StatusInternalServerError, belief.CodeInternal, "internal error", nil)
			}
		}
		if h.auth != nil {
			h.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", sw.status, "duration", time.Since(start), "principal", who)
			return
		}
		h.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", sw.status, "duration", time.Since(start))
	}()
	ar, ok := h.authenticate(sw, r)
	if !ok {
		return
	}
	who = owner(ar)
	h.mux.ServeHTTP(sw, ar)
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    belief.Code    `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		buf.Reset()
		status = http.StatusInternalServerError
		_ = json.NewEncoder(&buf).Encode(errorBody{errorDetail{Code: belief.CodeInternal, Message: "response encoding failed"}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func writeError(w http.ResponseWriter, status int, code belief.Code, msg string, details map[string]any) {
	writeJSON(w, status, errorBody{errorDetail{Code: code, Message: msg, Details: details}})
}

// statusOf maps an error to its HTTP status: INVALID_REQUEST and
// INVALID_HYPOTHESIS_ID 400; SESSION_NOT_FOUND, OBLIGATION_NOT_FOUND and
// EVENT_NOT_FOUND 404; SESSION_TERMINATED and CONFLICT 409, except a
// failed expected head (If-Match), which is 412 with code CONFLICT;
// anything else 500.
func statusOf(err error) int {
	switch belief.CodeOf(err) {
	case belief.CodeInvalidRequest, belief.CodeInvalidHypothesisID:
		return http.StatusBadRequest
	case belief.CodeSessionNotFound, belief.CodeObligationNotFound, belief.CodeEventNotFound:
		return http.StatusNotFound
	case belief.CodeConflict:
		if errors.Is(err, belief.ErrStaleHead) {
			return http.StatusPreconditionFailed
		}
		return http.StatusConflict
	case belief.CodeSessionTerminated:
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	code := belief.CodeOf(err)
	if status == http.StatusInternalServerError {
		h.log.Error("internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, status, belief.CodeInternal, "internal error", nil)
		return
	}
	msg, details := err.Error(), map[string]any(nil)
	var be *belief.Error
	var ve *belief.ValidationError
	switch {
	case errors.As(err, &ve):
		details = map[string]any{"violations": ve.Violations}
	case errors.As(err, &be):
		details = be.Details
	}
	writeError(w, status, code, msg, details)
}

// invalid is the INVALID_REQUEST of a request the transport refused: a
// *belief.ValidationError, as the core returns for one it refuses.
func invalid(vs []belief.Violation) error {
	return violation.New("belief", "request", vs, belief.ErrInvalidRequest)
}

// readBody reads the request body. A body over h.maxBody is answered
// 413 at once when Content-Length declares it, or as soon as the read
// passes the limit otherwise; a read error is answered 400. When it
// answers, readBody returns false.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength > h.maxBody {
		h.refuseBody(w, r, h.maxBody, !expectsContinue(r))
		return nil, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, h.maxBody+1))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		// An http.MaxBytesReader in front of the Handler: its limit, and
		// nothing left to drain (it reads no further).
		h.refuseBody(w, r, tooBig.Limit, false)
		return nil, false
	case err != nil:
		h.fail(w, r, &belief.Error{Err: belief.ErrInvalidRequest, Message: "reading the request body: " + err.Error()})
		return nil, false
	case int64(len(body)) > h.maxBody:
		h.refuseBody(w, r, h.maxBody, true)
		return nil, false
	}
	return body, true
}

// expectsContinue reports whether the client waits for 100 Continue
// before sending the body (net/http answers any other Expect with 417
// before the handler runs).
func expectsContinue(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Expect"), "100-continue")
}

// refuseBody answers 413 CONTENT_TOO_LARGE for limit, with Connection:
// close over HTTP/1. If the client is sending the body there (sending:
// it did not wait for a 100 Continue, which a 413 never sends), the
// answer is flushed and the rest of the body read and discarded — at
// most h.drainBytes (nothing when Content-Length already says more), for
// at most h.drainTime — before the connection closes: a lingering close.
//
// net/http alone resets such a client (net/http/server.go, Go 1.26): when
// the answer's header is written with more than maxPostHandlerReadBytes
// (256 KiB) of body unread, chunkWriter.writeHeader calls requestTooLarge,
// and after the handler conn.serve calls closeWriteAndWait — FIN,
// rstAvoidanceDelay (500 ms) without reading, close — so the socket closes
// with the client's bytes unread, the kernel sends RST and a client still
// writing loses the answer. What the drain relies on, from the same file:
// "Connection: close" (closeAfterReply) and EnableFullDuplex (fullDuplex)
// each keep writeHeader from consuming the body itself; a final status
// disables the automatic 100 Continue (disableWriteContinue), so reading
// never invites a body; a body read to EOF leaves finishRequest's
// body.Close nothing to discard and closedRequestBodyEarly false, so the
// socket closes with nothing unread and no RST.
//
// A drain must end: when the connection's read deadline cannot be set (a
// ResponseWriter wrapper without Unwrap hides the connection) the body is
// drained only if the http.Server has a ReadTimeout, which then bounds
// it, and not at all otherwise; and at most cap(h.drains) drains run at
// once, beyond which the answer goes without one.
func (h *Handler) refuseBody(w http.ResponseWriter, r *http.Request, limit int64, sending bool) {
	drain := r.ProtoMajor == 1 && sending && r.ContentLength <= h.drainBytes
	rc := http.NewResponseController(w)
	if r.ProtoMajor == 1 {
		_ = rc.EnableFullDuplex()
		w.Header().Set("Connection", "close")
	}
	writeError(w, http.StatusRequestEntityTooLarge, CodeContentTooLarge,
		fmt.Sprintf("request body exceeds %d bytes", limit), map[string]any{"limit_bytes": limit})
	if !drain {
		return
	}
	select {
	case h.drains <- struct{}{}:
		defer func() { <-h.drains }()
	default:
		return // enough connections are draining already
	}
	_ = rc.Flush() // without it the answer goes when the handler returns
	if rc.SetReadDeadline(time.Now().Add(h.drainTime)) != nil && !hasReadTimeout(r) {
		return // nothing would end the drain of a silent client
	}
	_, _ = io.CopyN(io.Discard, r.Body, h.drainBytes)
}

// hasReadTimeout reports whether the http.Server serving r has a
// ReadTimeout, which bounds every read of the request's body.
func hasReadTimeout(r *http.Request) bool {
	hs, ok := r.Context().Value(http.ServerContextKey).(*http.Server)
	return ok && hs.ReadTimeout > 0
}

// callOptions turns an If-Match header into an expected audit head. The
// value is the audit head event id, quoted as an entity tag or bare; "*"
// matches any head.
func callOptions(r *http.Request) []belief.CallOption {
	v := strings.TrimSpace(r.Header.Get("If-Match"))
	if v == "" || v == "*" {
		return nil
	}
	v = strings.TrimPrefix(v, "W/")
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if v == "" {
		// An empty tag matches no head: a session always has one.
		v = "\x00"
	}
	return []belief.CallOption{belief.ExpectHead(v)}
}

// session resolves the {session_id} path value to a session of the
// caller: one whose recorded owner is the caller's principal (""
// without authentication). Any other is SESSION_NOT_FOUND, worded as for
// an id that names no session.
func (h *Handler) session(r *http.Request) (*belief.Session, error) {
	id := r.PathValue("session_id")
	s, err := h.b.Session(r.Context(), id)
	if err != nil {
		return nil, err
	}
	st, err := s.State(r.Context())
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(st.Owner()), []byte(owner(r))) != 1 {
		return nil, notFound(id)
	}
	return s, nil
}

func setETag(w http.ResponseWriter, snap belief.Snapshot) {
	if snap.AuditHeadEventID != nil {
		w.Header().Set("ETag", `"`+*snap.AuditHeadEventID+`"`)
	}
}

// DeclareResponse is the body of 201 on POST /v1/sessions.
type DeclareResponse struct {
	SessionID string          `json:"session_id"`
	Snapshot  belief.Snapshot `json:"snapshot"`
}

// EliminateResponse is the body of 200 on POST .../eliminate.
type EliminateResponse struct {
	Applied      []string        `json:"applied_eliminated"`
	Ignored      []string        `json:"ignored_eliminated"`
	Snapshot     belief.Snapshot `json:"snapshot"`
	AuditEventID string          `json:"audit_event_id"`
}

// AuditResponse is the body of 200 on GET .../audit. A client reads the
// events back with belief.DecodeAuditLog (json.Unmarshal does not read an
// AuditEntry).
type AuditResponse struct {
	Events []belief.AuditEntry `json:"events"`
}

// ObligationResponse is the body of 200 on POST .../obligations.
type ObligationResponse struct {
	Snapshot     belief.Snapshot `json:"snapshot"`
	AuditEventID string          `json:"audit_event_id"`
}

// DecisionResponse is the body of 200 on POST .../exit and .../terminate.
type DecisionResponse struct {
	Approved     bool            `json:"approved"`
	Reason       string          `json:"reason"`
	Snapshot     belief.Snapshot `json:"snapshot"`
	AuditEventID string          `json:"audit_event_id"`
}

// ConclusionResponse is the body of 200 on POST .../conclusions.
type ConclusionResponse struct {
	Accepted     bool            `json:"accepted"`
	Reason       string          `json:"reason"`
	Snapshot     belief.Snapshot `json:"snapshot"`
	AuditEventID string          `json:"audit_event_id"`
}

func (h *Handler) declare(w http.ResponseWriter, r *http.Request) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	req, vs := decodeDeclare(body)
	if len(vs) > 0 {
		h.fail(w, r, invalid(vs))
		return
	}
	req.Owner = owner(r)
	sess, st, err := h.b.Declare(r.Context(), req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	snap := st.Snapshot()
	w.Header().Set("Location", "/v1/sessions/"+url.PathEscape(sess.ID()))
	setETag(w, snap)
	writeJSON(w, http.StatusCreated, DeclareResponse{SessionID: sess.ID(), Snapshot: snap})
}

func (h *Handler) snapshot(w http.ResponseWriter, r *http.Request) {
	sess, err := h.session(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	snap, err := sess.Snapshot(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	setETag(w, snap)
	writeJSON(w, http.StatusOK, snap)
}

func (h *Handler) audit(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	// The query reads as an object of parameters: a violation's path
	// names the parameter ("/since_event_id"), "" the whole query.
	var vs []belief.Violation
	if err != nil {
		vs = append(vs, belief.Violation{Rule: belief.RuleSyntax, Message: err.Error()})
	}
	for k, v := range q {
		switch {
		case k != "since_event_id":
			vs = append(vs, belief.Violation{Path: violation.Join("", k), Rule: belief.RuleUnknownField, Message: "unknown query parameter"})
		case len(v) != 1:
			vs = append(vs, belief.Violation{Path: "/since_event_id", Rule: belief.RuleDuplicate, Message: "must be given once"})
		case v[0] == "":
			vs = append(vs, belief.Violation{Path: "/since_event_id", Rule: belief.RuleRequired, Message: "must not be empty"})
		}
	}
	if len(vs) > 0 {
		h.fail(w, r, invalid(vs))
		return
	}
	sess, err := h.session(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	evs, err := sess.Events(r.Context(), q.Get("since_event_id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, AuditResponse{Events: evs})
}

// mutation is the common path of every POST on a session: read and decode
// the body, find the session, run the verb, answer.
func mutation[Req any](h *Handler, w http.ResponseWriter, r *http.Request,
	decode func(body []byte) (Req, []belief.Violation),
	run func(ctx context.Context, s *belief.Session, req Req, opts []belief.CallOption) (any, belief.State, error)) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	req, vs := decode(body)
	if len(vs) > 0 {
		h.fail(w, r, invalid(vs))
		return
	}
	sess, err := h.session(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	resp, st, err := run(r.Context(), sess, req, callOptions(r))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if head, _ := st.Head(); head != "" {
		w.Header().Set("ETag", `"`+head+`"`)
	}
	writeJSON(w, http.StatusOK, resp)
}

func (h *Handler) eliminate(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("session_id")
	mutation(h, w, r, func(b []byte) (belief.EliminateRequest, []belief.Violation) { return decodeEliminate(b, sid) },
		func(ctx context.Context, s *belief.Session, req belief.EliminateRequest, opts []belief.CallOption) (any, belief.State, error) {
			res, st, err := s.Eliminate(ctx, req, opts...)
			if err != nil {
				return nil, st, err
			}
			if res.Repeated {
				w.Header().Set(HeaderIdempotentReplay, "true")
			}
			return EliminateResponse{Applied: res.Applied, Ignored: res.Ignored, Snapshot: st.Snapshot(), AuditEventID: res.AuditEventID}, st, nil
		})
}

func (h *Handler) obligation(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("session_id")
	mutation(h, w, r, func(b []byte) (belief.ObligationRequest, []belief.Violation) { return decodeObligation(b, sid) },
		func(ctx context.Context, s *belief.Session, req belief.ObligationRequest, opts []belief.CallOption) (any, belief.State, error) {
			id, st, err := s.EnterObligation(ctx, req, opts...)
			return ObligationResponse{Snapshot: st.Snapshot(), AuditEventID: id}, st, err
		})
}

func (h *Handler) exit(w http.ResponseWriter, r *http.Request) {
	sid, oid := r.PathValue("session_id"), r.PathValue("obligation_id")
	mutation(h, w, r, func(b []byte) (belief.ExitRequest, []belief.Violation) { return decodeExit(b, sid, oid) },
		func(ctx context.Context, s *belief.Session, req belief.ExitRequest, opts []belief.CallOption) (any, belief.State, error) {
			res, st, err := s.RequestExit(ctx, req, opts...)
			return DecisionResponse{Approved: res.Approved, Reason: res.Reason, Snapshot: st.Snapshot(), AuditEventID: res.AuditEventID}, st, err
		})
}

func (h *Handler) conclusion(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("session_id")
	mutation(h, w, r, func(b []byte) (belief.ConclusionRequest, []belief.Violation) { return decodeConclusion(b, sid) },
		func(ctx context.Context, s *belief.Session, req belief.ConclusionRequest, opts []belief.CallOption) (any, belief.State, error) {
			res, st, err := s.DeclareConclusion(ctx, req, opts...)
			return ConclusionResponse{Accepted: res.Accepted, Reason: res.Reason, Snapshot: st.Snapshot(), AuditEventID: res.AuditEventID}, st, err
		})
}

func (h *Handler) terminate(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("session_id")
	mutation(h, w, r, func(b []byte) (belief.TerminationRequest, []belief.Violation) { return decodeTermination(b, sid) },
		func(ctx context.Context, s *belief.Session, req belief.TerminationRequest, opts []belief.CallOption) (any, belief.State, error) {
			res, st, err := s.RequestTermination(ctx, req, opts...)
			return DecisionResponse{Approved: res.Approved, Reason: res.Reason, Snapshot: st.Snapshot(), AuditEventID: res.AuditEventID}, st, err
		})
}
