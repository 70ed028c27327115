// The HTTP transport, and the tests that check it.
//
//   - Every error code over HTTP, in the documented envelope; violations
//     carry a JSON Pointer and a rule, belief errors say "belief: " once:
//     TestHTTPErrorModel, TestStatusOf.
//   - Every documented status is produced and nothing else:
//     TestHTTPStatusCoverage.
//   - Many goroutines over many sessions (-race), and the audit log read
//     back with belief.DecodeAuditLog replays to the snapshot:
//     TestHTTPConcurrent.
//   - Restart over a FileStorage: TestHTTPRestartFileStorage.

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/trace"
)

const testBodyLimit = 4096

// env is one handler over a memory storage with one declared session.
type env struct {
	t       testing.TB
	storage *flakyStorage
	h       *Handler
	sid     string
}

// flakyStorage fails Create when told to, to exercise 500.
type flakyStorage struct {
	*belief.MemoryStorage
	failCreate bool
}

func (f *flakyStorage) Create(ctx context.Context, id string) (trace.Store, error) {
	if f.failCreate {
		return nil, errors.New("disk full")
	}
	return f.MemoryStorage.Create(ctx, id)
}

func newEnv(t testing.TB, pol belief.Policy) *env {
	t.Helper()
	st := &flakyStorage{MemoryStorage: belief.NewMemoryStorage()}
	b, err := belief.NewServer(context.Background(), st, belief.WithPolicy(pol))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	e := &env{t: t, storage: st, h: New(b, WithMaxBodyBytes(testBodyLimit))}
	resp := e.do("POST", "/v1/sessions", `{"ontology":{"hypothesis_space_id":"hs","hypothesis_version":"v1","causal_graph_ref":"graphstore://x","causal_graph_version":"v17"},"hypotheses":["a","b","c"]}`, nil)
	require.Equal(t, 201, resp.status, resp.text)
	e.sid = resp.body["session_id"].(string)
	return e
}

type response struct {
	status  int
	header  http.Header
	text    string
	body    map[string]any
	pattern string
}

func (e *env) do(method, path, body string, header map[string]string) response {
	path = strings.ReplaceAll(path, "{sid}", e.sid)
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	for k, v := range header {
		req.Header.Set(k, strings.ReplaceAll(v, "{head}", e.head()))
	}
	_, pattern := e.h.mux.Handler(req)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	out := response{status: rec.Code, header: rec.Header(), text: rec.Body.String(), pattern: pattern}
	_ = json.Unmarshal(rec.Body.Bytes(), &out.body)
	return out
}

func (e *env) head() string {
	if e.sid == "" {
		return ""
	}
	req := httptest.NewRequest("GET", "/v1/sessions/"+e.sid, nil)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	var snap belief.Snapshot
	if json.Unmarshal(rec.Body.Bytes(), &snap) != nil || snap.AuditHeadEventID == nil {
		return ""
	}
	return *snap.AuditHeadEventID
}

func (e *env) mustPost(path, body string) response {
	e.t.Helper()
	r := e.do("POST", path, body, nil)
	require.Equal(e.t, 200, r.status, r.text)
	return r
}

// breakLog appends a foreign entry to the session's store, so that the
// next catch-up fails: a storage-side fault, answered 500.
func (e *env) breakLog() {
	store, err := e.storage.Open(context.Background(), e.sid)
	require.NoError(e.t, err)
	l, err := trace.NewLog(store)
	require.NoError(e.t, err)
	_, err = l.Append(context.Background(), "kernel.execute", []byte(`{"x":1}`))
	require.NoError(e.t, err)
}

func (e *env) terminate() {
	e.mustPost("/v1/sessions/{sid}/eliminate", `{"source_id":"s","observation_id":"all-but-c","eliminated":["a","b"]}`)
	r := e.mustPost("/v1/sessions/{sid}/terminate", `{}`)
	require.Equal(e.t, true, r.body["approved"])
}

type httpCase struct {
	name   string
	setup  func(e *env)
	policy belief.Policy
	method string
	path   string
	body   string
	header map[string]string
	status int
	code   belief.Code
	check  func(t *testing.T, e *env, r response)
}

const (
	ontoJSON = `"ontology":{"hypothesis_space_id":"hs","hypothesis_version":"v1","causal_graph_ref":"g","causal_graph_version":"v1"}`
	elimA    = `{"source_id":"s","observation_id":"o1","eliminated":["a"]}`
)

// oversize is one byte over the test body limit.
var oversize = strings.Repeat(" ", testBodyLimit+1)

// padTo pads a JSON text with trailing spaces to n bytes.
func padTo(s string, n int) string { return s + strings.Repeat(" ", n-len(s)) }

// violations returns the details.violations of an error response, each
// as "path rule".
func violations(r response) []string {
	var out []string
	d, _ := r.body["error"].(map[string]any)["details"].(map[string]any)
	vs, _ := d["violations"].([]any)
	for _, v := range vs {
		m := v.(map[string]any)
		out = append(out, fmt.Sprintf("%s %s", m["path"], m["rule"]))
	}
	return out
}

func violationPaths(r response) []string {
	var out []string
	for _, v := range violations(r) {
		out = append(out, strings.Fields(v + " ")[0])
	}
	return out
}

var httpCases = []httpCase{
	// POST /v1/sessions
	{name: "DeclareCreated", method: "POST", path: "/v1/sessions", body: `{` + ontoJSON + `,"hypotheses":["b","a","b"],"metadata":{"k":"v"}}`, status: 201,
		check: func(t *testing.T, e *env, r response) {
			snap := r.body["snapshot"].(map[string]any)
			assert.Equal(t, []any{"a", "b"}, snap["survivors"])
			assert.Equal(t, "/v1/sessions/"+r.body["session_id"].(string), r.header.Get("Location"))
			assert.Equal(t, `"`+snap["audit_head_event_id"].(string)+`"`, r.header.Get("ETag"))
		}},
	{name: "DeclareMalformedJSON", method: "POST", path: "/v1/sessions", body: `{"hypotheses":`, status: 400, code: belief.CodeInvalidRequest},
	{name: "DeclareUnknownField", method: "POST", path: "/v1/sessions", body: `{` + ontoJSON + `,"hypotheses":["a"],"extra":1}`, status: 400, code: belief.CodeInvalidRequest,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, []string{"/extra unknown_field"}, violations(r))
		}},
	{name: "DeclareUnknownOntologyField", method: "POST", path: "/v1/sessions", body: `{"ontology":{"hypothesis_space_id":"hs","hypothesis_version":"v1","causal_graph_ref":"g","causal_graph_version":"v1","x":1},"hypotheses":["a"]}`, status: 400, code: belief.CodeInvalidRequest},
	{name: "DeclareWrongTypes", method: "POST", path: "/v1/sessions", body: `{"ontology":[],"hypotheses":["a",1,null],"metadata":"m"}`, status: 400, code: belief.CodeInvalidRequest,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, []string{"/hypotheses/1 type", "/hypotheses/2 type", "/metadata type", "/ontology type"}, violations(r), "all violations, sorted")
		}},
	{name: "DeclareEmptyList", method: "POST", path: "/v1/sessions", body: `{` + ontoJSON + `,"hypotheses":[]}`, status: 400, code: belief.CodeInvalidRequest},
	{name: "DeclareMissingEverything", method: "POST", path: "/v1/sessions", body: ``, status: 400, code: belief.CodeInvalidRequest,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, []string{"/hypotheses required", "/ontology required"}, violations(r))
		}},
	{name: "DeclareDuplicateKey", method: "POST", path: "/v1/sessions", body: `{` + ontoJSON + `,"hypotheses":["a"],"hypotheses":["b"]}`, status: 400, code: belief.CodeInvalidRequest},
	{name: "DeclareTopLevelArray", method: "POST", path: "/v1/sessions", body: `[1]`, status: 400, code: belief.CodeInvalidRequest},
	{name: "DeclareInvalidUTF8", method: "POST", path: "/v1/sessions", body: `{` + ontoJSON + `,"hypotheses":["` + "\xff" + `"]}`, status: 400, code: belief.CodeInvalidRequest},
	{name: "DeclareUnsafeInteger", method: "POST", path: "/v1/sessions", body: `{` + ontoJSON + `,"hypotheses":["a"],"metadata":{"n":9007199254740993}}`, status: 400, code: belief.CodeInvalidRequest},
	{name: "DeclareOversize", method: "POST", path: "/v1/sessions", body: `{` + ontoJSON + `,"hypotheses":["` + strings.Repeat("x", testBodyLimit) + `"]}`, status: 413, code: CodeContentTooLarge,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, float64(testBodyLimit), r.body["error"].(map[string]any)["details"].(map[string]any)["limit_bytes"])
		}},
	{name: "DeclareAtLimit", method: "POST", path: "/v1/sessions", body: padTo(`{`+ontoJSON+`,"hypotheses":["a"]}`, testBodyLimit), status: 201},
	{name: "DeclareStorageFailure", setup: func(e *env) { e.storage.failCreate = true }, method: "POST", path: "/v1/sessions", body: `{` + ontoJSON + `,"hypotheses":["a"]}`, status: 500, code: belief.CodeInternal,
		check: func(t *testing.T, e *env, r response) {
			assert.NotContains(t, r.text, "disk full", "internal details are logged, not sent")
		}},

	// GET /v1/sessions/{session_id}
	{name: "SnapshotOK", method: "GET", path: "/v1/sessions/{sid}", status: 200,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, []any{"a", "b", "c"}, r.body["survivors"])
			assert.Equal(t, float64(3), r.body["n_survivors"])
			assert.Nil(t, r.body["active_obligation_id"])
			assert.Equal(t, `"`+r.body["audit_head_event_id"].(string)+`"`, r.header.Get("ETag"))
		}},
	{name: "SnapshotUnknownSession", method: "GET", path: "/v1/sessions/nope", status: 404, code: belief.CodeSessionNotFound},
	{name: "SnapshotBrokenLog", setup: (*env).breakLog, method: "GET", path: "/v1/sessions/{sid}", status: 500, code: belief.CodeInternal},

	// POST /v1/sessions/{session_id}/eliminate
	{name: "EliminateApplied", method: "POST", path: "/v1/sessions/{sid}/eliminate", body: `{"session_id":"{sid}","source_id":"s","observation_id":"o1","eliminated":["a","a"],"justification":{"probe":"p1"}}`, status: 200,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, []any{"a"}, r.body["applied_eliminated"])
			assert.Equal(t, []any{}, r.body["ignored_eliminated"])
			assert.Equal(t, []any{"b", "c"}, r.body["snapshot"].(map[string]any)["survivors"])
			assert.NotEmpty(t, r.body["audit_event_id"])
			assert.Empty(t, r.header.Get(HeaderIdempotentReplay))
		}},
	{name: "EliminateRepeatReturnsFirstResponse", setup: func(e *env) { e.mustPost("/v1/sessions/{sid}/eliminate", elimA) },
		method: "POST", path: "/v1/sessions/{sid}/eliminate", body: elimA, status: 200,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, []any{"a"}, r.body["applied_eliminated"])
			assert.Equal(t, "true", r.header.Get(HeaderIdempotentReplay))
			assert.Equal(t, r.body["audit_event_id"], r.body["snapshot"].(map[string]any)["audit_head_event_id"], "no new event")
		}},
	{name: "EliminateUnknownHypothesis", method: "POST", path: "/v1/sessions/{sid}/eliminate", body: `{"source_id":"s","observation_id":"o1","eliminated":["a","zz"]}`, status: 400, code: belief.CodeInvalidHypothesisID,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, []any{"zz"}, r.body["error"].(map[string]any)["details"].(map[string]any)["unknown_ids"])
			snap := e.do("GET", "/v1/sessions/{sid}", "", nil)
			assert.Equal(t, []any{"a", "b", "c"}, snap.body["survivors"], "nothing applied")
		}},
	{name: "EliminateSessionIDMismatch", method: "POST", path: "/v1/sessions/{sid}/eliminate", body: `{"session_id":"other","source_id":"s","observation_id":"o1","eliminated":["a"]}`, status: 400, code: belief.CodeInvalidRequest,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, []string{"/session_id path_mismatch"}, violations(r))
		}},
	{name: "EliminateMissingFields", method: "POST", path: "/v1/sessions/{sid}/eliminate", body: `{}`, status: 400, code: belief.CodeInvalidRequest,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, []string{"/eliminated", "/observation_id", "/source_id"}, violationPaths(r))
		}},
	{name: "EliminateWrongTypes", method: "POST", path: "/v1/sessions/{sid}/eliminate", body: `{"source_id":1,"observation_id":"o","eliminated":"a","justification":[]}`, status: 400, code: belief.CodeInvalidRequest,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, []string{"/eliminated", "/justification", "/source_id"}, violationPaths(r))
		}},
	{name: "EliminateEmptySourceID", method: "POST", path: "/v1/sessions/{sid}/eliminate", body: `{"source_id":"","observation_id":"o","eliminated":[]}`, status: 400, code: belief.CodeInvalidRequest},
	{name: "EliminateUnknownSession", method: "POST", path: "/v1/sessions/nope/eliminate", body: elimA, status: 404, code: belief.CodeSessionNotFound},
	{name: "EliminateKeyConflict", setup: func(e *env) { e.mustPost("/v1/sessions/{sid}/eliminate", elimA) },
		method: "POST", path: "/v1/sessions/{sid}/eliminate", body: `{"source_id":"s","observation_id":"o1","eliminated":["b"]}`, status: 409, code: belief.CodeConflict},
	{name: "EliminateTerminated", setup: (*env).terminate, method: "POST", path: "/v1/sessions/{sid}/eliminate", body: `{"source_id":"s","observation_id":"late","eliminated":["c"]}`, status: 409, code: belief.CodeSessionTerminated},
	{name: "EliminateIfMatchStale", method: "POST", path: "/v1/sessions/{sid}/eliminate", body: elimA, header: map[string]string{"If-Match": `"stale"`}, status: 412, code: belief.CodeConflict,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, e.head(), r.body["error"].(map[string]any)["details"].(map[string]any)["audit_head_event_id"])
		}},
	{name: "EliminateIfMatchCurrent", method: "POST", path: "/v1/sessions/{sid}/eliminate", body: elimA, header: map[string]string{"If-Match": `"{head}"`}, status: 200},
	{name: "EliminateIfMatchBare", method: "POST", path: "/v1/sessions/{sid}/eliminate", body: elimA, header: map[string]string{"If-Match": `{head}`}, status: 200},
	{name: "EliminateIfMatchAny", method: "POST", path: "/v1/sessions/{sid}/eliminate", body: elimA, header: map[string]string{"If-Match": `*`}, status: 200},
	{name: "EliminateBrokenLog", setup: (*env).breakLog, method: "POST", path: "/v1/sessions/{sid}/eliminate", body: elimA, status: 500, code: belief.CodeInternal},
	{name: "EliminateOversize", method: "POST", path: "/v1/sessions/{sid}/eliminate", body: oversize, status: 413, code: CodeContentTooLarge},

	// GET /v1/sessions/{session_id}/audit
	{name: "AuditAll", setup: func(e *env) { e.mustPost("/v1/sessions/{sid}/eliminate", elimA) }, method: "GET", path: "/v1/sessions/{sid}/audit", status: 200,
		check: func(t *testing.T, e *env, r response) {
			evs := r.body["events"].([]any)
			require.Len(t, evs, 2)
			assert.Equal(t, "DECLARE_SESSION", evs[0].(map[string]any)["verb"])
			assert.Equal(t, "ELIMINATE", evs[1].(map[string]any)["verb"])
			since := e.do("GET", "/v1/sessions/{sid}/audit?since_event_id="+evs[0].(map[string]any)["event_id"].(string), "", nil)
			require.Equal(t, 200, since.status)
			assert.Equal(t, evs[1:], since.body["events"])
		}},
	{name: "AuditUnknownEvent", method: "GET", path: "/v1/sessions/{sid}/audit?since_event_id=nope", status: 404, code: belief.CodeEventNotFound},
	{name: "AuditUnknownSession", method: "GET", path: "/v1/sessions/nope/audit", status: 404, code: belief.CodeSessionNotFound},
	{name: "AuditUnknownParameter", method: "GET", path: "/v1/sessions/{sid}/audit?since=x", status: 400, code: belief.CodeInvalidRequest},
	{name: "AuditRepeatedParameter", method: "GET", path: "/v1/sessions/{sid}/audit?since_event_id=a&since_event_id=b", status: 400, code: belief.CodeInvalidRequest},
	{name: "AuditBadQuery", method: "GET", path: "/v1/sessions/{sid}/audit?since_event_id=%zz", status: 400, code: belief.CodeInvalidRequest},
	{name: "AuditBrokenLog", setup: (*env).breakLog, method: "GET", path: "/v1/sessions/{sid}/audit", status: 500, code: belief.CodeInternal},

	// POST /v1/sessions/{session_id}/obligations
	{name: "ObligationEntered", method: "POST", path: "/v1/sessions/{sid}/obligations", body: `{"obligation_id":"ob","min_total_eliminations":1}`, status: 200,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, "ob", r.body["snapshot"].(map[string]any)["active_obligation_id"])
			assert.Equal(t, r.body["audit_event_id"], r.body["snapshot"].(map[string]any)["audit_head_event_id"])
		}},
	{name: "ObligationNegativeMinimum", method: "POST", path: "/v1/sessions/{sid}/obligations", body: `{"obligation_id":"ob","min_total_eliminations":-1}`, status: 400, code: belief.CodeInvalidRequest},
	{name: "ObligationFractionalMinimum", method: "POST", path: "/v1/sessions/{sid}/obligations", body: `{"obligation_id":"ob","min_total_eliminations":1.5}`, status: 400, code: belief.CodeInvalidRequest},
	{name: "ObligationStringMinimum", method: "POST", path: "/v1/sessions/{sid}/obligations", body: `{"obligation_id":"ob","min_total_eliminations":"2"}`, status: 400, code: belief.CodeInvalidRequest},
	{name: "ObligationSecondActive", setup: func(e *env) {
		e.mustPost("/v1/sessions/{sid}/obligations", `{"obligation_id":"ob","min_total_eliminations":0}`)
	},
		method: "POST", path: "/v1/sessions/{sid}/obligations", body: `{"obligation_id":"ob2","min_total_eliminations":0}`, status: 409, code: belief.CodeConflict},
	{name: "ObligationUnknownSession", method: "POST", path: "/v1/sessions/nope/obligations", body: `{"obligation_id":"ob","min_total_eliminations":0}`, status: 404, code: belief.CodeSessionNotFound},
	{name: "ObligationTerminated", setup: (*env).terminate, method: "POST", path: "/v1/sessions/{sid}/obligations", body: `{"obligation_id":"ob","min_total_eliminations":0}`, status: 409, code: belief.CodeSessionTerminated},
	{name: "ObligationIfMatchStale", method: "POST", path: "/v1/sessions/{sid}/obligations", body: `{"obligation_id":"ob","min_total_eliminations":0}`, header: map[string]string{"If-Match": `"x"`}, status: 412, code: belief.CodeConflict},
	{name: "ObligationBrokenLog", setup: (*env).breakLog, method: "POST", path: "/v1/sessions/{sid}/obligations", body: `{"obligation_id":"ob","min_total_eliminations":0}`, status: 500, code: belief.CodeInternal},
	{name: "ObligationOversize", method: "POST", path: "/v1/sessions/{sid}/obligations", body: oversize, status: 413, code: CodeContentTooLarge},

	// POST /v1/sessions/{session_id}/obligations/{obligation_id}/exit
	{name: "ExitApproved", setup: func(e *env) {
		e.mustPost("/v1/sessions/{sid}/obligations", `{"obligation_id":"ob","min_total_eliminations":1}`)
		e.mustPost("/v1/sessions/{sid}/eliminate", elimA)
	}, method: "POST", path: "/v1/sessions/{sid}/obligations/ob/exit", body: `{"obligation_id":"ob","context":{"by":"me"}}`, status: 200,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, true, r.body["approved"])
			assert.Nil(t, r.body["snapshot"].(map[string]any)["active_obligation_id"])
		}},
	{name: "ExitRefusedIsAudited", setup: func(e *env) {
		e.mustPost("/v1/sessions/{sid}/obligations", `{"obligation_id":"ob","min_total_eliminations":1}`)
	},
		method: "POST", path: "/v1/sessions/{sid}/obligations/ob/exit", status: 200,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, false, r.body["approved"])
			assert.NotEmpty(t, r.body["reason"])
			assert.Equal(t, r.body["audit_event_id"], r.body["snapshot"].(map[string]any)["audit_head_event_id"])
		}},
	{name: "ExitUnknownObligation", method: "POST", path: "/v1/sessions/{sid}/obligations/nope/exit", body: `{}`, status: 404, code: belief.CodeObligationNotFound},
	{name: "ExitObligationIDMismatch", method: "POST", path: "/v1/sessions/{sid}/obligations/ob/exit", body: `{"obligation_id":"other"}`, status: 400, code: belief.CodeInvalidRequest},
	{name: "ExitUnknownSession", method: "POST", path: "/v1/sessions/nope/obligations/ob/exit", body: `{}`, status: 404, code: belief.CodeSessionNotFound},
	{name: "ExitTerminated", setup: (*env).terminate, method: "POST", path: "/v1/sessions/{sid}/obligations/ob/exit", body: `{}`, status: 409, code: belief.CodeSessionTerminated},
	{name: "ExitIfMatchStale", method: "POST", path: "/v1/sessions/{sid}/obligations/ob/exit", body: `{}`, header: map[string]string{"If-Match": `"x"`}, status: 412, code: belief.CodeConflict},
	{name: "ExitBrokenLog", setup: (*env).breakLog, method: "POST", path: "/v1/sessions/{sid}/obligations/ob/exit", body: `{}`, status: 500, code: belief.CodeInternal},
	{name: "ExitOversize", method: "POST", path: "/v1/sessions/{sid}/obligations/ob/exit", body: oversize, status: 413, code: CodeContentTooLarge},

	// POST /v1/sessions/{session_id}/conclusions
	{name: "ConclusionAccepted", method: "POST", path: "/v1/sessions/{sid}/conclusions", body: `{"conclusion_id":"c1","context":{"note":"n"}}`, status: 200,
		check: func(t *testing.T, e *env, r response) { assert.Equal(t, true, r.body["accepted"]) }},
	{name: "ConclusionRefusedUnderObligation", setup: func(e *env) {
		e.mustPost("/v1/sessions/{sid}/obligations", `{"obligation_id":"ob","min_total_eliminations":1}`)
	},
		method: "POST", path: "/v1/sessions/{sid}/conclusions", body: `{"conclusion_id":"c1"}`, status: 200,
		check: func(t *testing.T, e *env, r response) { assert.Equal(t, false, r.body["accepted"]) }},
	{name: "ConclusionMissingID", method: "POST", path: "/v1/sessions/{sid}/conclusions", body: `{}`, status: 400, code: belief.CodeInvalidRequest},
	{name: "ConclusionUnknownSession", method: "POST", path: "/v1/sessions/nope/conclusions", body: `{"conclusion_id":"c1"}`, status: 404, code: belief.CodeSessionNotFound},
	{name: "ConclusionTerminated", setup: (*env).terminate, method: "POST", path: "/v1/sessions/{sid}/conclusions", body: `{"conclusion_id":"c1"}`, status: 409, code: belief.CodeSessionTerminated},
	{name: "ConclusionIfMatchStale", method: "POST", path: "/v1/sessions/{sid}/conclusions", body: `{"conclusion_id":"c1"}`, header: map[string]string{"If-Match": `"x"`}, status: 412, code: belief.CodeConflict},
	{name: "ConclusionBrokenLog", setup: (*env).breakLog, method: "POST", path: "/v1/sessions/{sid}/conclusions", body: `{"conclusion_id":"c1"}`, status: 500, code: belief.CodeInternal},
	{name: "ConclusionOversize", method: "POST", path: "/v1/sessions/{sid}/conclusions", body: oversize, status: 413, code: CodeContentTooLarge},

	// POST /v1/sessions/{session_id}/terminate
	{name: "TerminateApproved", setup: func(e *env) {
		e.mustPost("/v1/sessions/{sid}/eliminate", `{"source_id":"s","observation_id":"o","eliminated":["a","b"]}`)
	}, method: "POST", path: "/v1/sessions/{sid}/terminate", status: 200,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, true, r.body["approved"])
			assert.Equal(t, true, r.body["snapshot"].(map[string]any)["terminated"])
			snap := e.do("GET", "/v1/sessions/{sid}", "", nil)
			assert.Equal(t, 200, snap.status, "reads work after termination")
		}},
	{name: "TerminateRefused", method: "POST", path: "/v1/sessions/{sid}/terminate", body: `{"context":{"force":true}}`, status: 200,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, false, r.body["approved"], "force is off by default")
			assert.Contains(t, r.body["reason"], "force")
		}},
	{name: "TerminateForced", policy: belief.Policy{AllowForce: true}, method: "POST", path: "/v1/sessions/{sid}/terminate", body: `{"context":{"force":true}}`, status: 200,
		check: func(t *testing.T, e *env, r response) { assert.Equal(t, true, r.body["approved"]) }},
	{name: "TerminateForceNotBoolean", method: "POST", path: "/v1/sessions/{sid}/terminate", body: `{"context":{"force":"yes"}}`, status: 400, code: belief.CodeInvalidRequest,
		check: func(t *testing.T, e *env, r response) {
			assert.Equal(t, []string{"/context/force type"}, violations(r))
		}},
	{name: "TerminateUnknownSession", method: "POST", path: "/v1/sessions/nope/terminate", body: `{}`, status: 404, code: belief.CodeSessionNotFound},
	{name: "TerminateTwice", setup: (*env).terminate, method: "POST", path: "/v1/sessions/{sid}/terminate", body: `{}`, status: 409, code: belief.CodeSessionTerminated},
	{name: "TerminateIfMatchStale", method: "POST", path: "/v1/sessions/{sid}/terminate", body: `{}`, header: map[string]string{"If-Match": `W/"x"`}, status: 412, code: belief.CodeConflict},
	{name: "TerminateBrokenLog", setup: (*env).breakLog, method: "POST", path: "/v1/sessions/{sid}/terminate", body: `{}`, status: 500, code: belief.CodeInternal},
	{name: "TerminateOversize", method: "POST", path: "/v1/sessions/{sid}/terminate", body: oversize, status: 413, code: CodeContentTooLarge},

	// Outside the API.
	{name: "UnknownPath", method: "GET", path: "/v2/nothing", status: 404, code: CodeNotFound},
	{name: "MethodNotAllowed", method: "DELETE", path: "/v1/sessions/{sid}", status: 405, code: CodeMethodNotAllowed,
		check: func(t *testing.T, e *env, r response) { assert.Equal(t, "GET", r.header.Get("Allow")) }},
}

// TestHTTPErrorModel runs every case and checks status, the error
// envelope, and the case's own assertions.
func TestHTTPErrorModel(t *testing.T) {
	for _, c := range httpCases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.policy)
			if c.setup != nil {
				c.setup(e)
			}
			r := e.do(c.method, c.path, strings.ReplaceAll(c.body, "{sid}", e.sid), c.header)
			require.Equal(t, c.status, r.status, r.text)
			assert.Equal(t, "application/json", r.header.Get("Content-Type"))
			if c.status >= 400 {
				envelope, ok := r.body["error"].(map[string]any)
				require.True(t, ok, "error envelope: %s", r.text)
				assert.Equal(t, string(c.code), envelope["code"])
				assert.NotEmpty(t, envelope["message"])
				assert.Len(t, r.body, 1, "only the error member")
				if msg, _ := envelope["message"].(string); strings.HasPrefix(msg, "belief: ") {
					assert.Equal(t, 1, strings.Count(msg, "belief: "), "a belief error is prefixed once: %q", msg)
				}
				for _, v := range violations(r) {
					assert.Regexp(t, `^(/\S*)? [a-z_0-9]+$`, v, "a violation is a JSON Pointer and a rule")
				}
			}
			if c.check != nil {
				c.check(t, e, r)
			}
		})
	}
}

// TestHTTPStatusCoverage checks that the cases above produce exactly the
// statuses each route documents (routes table = api/openapi.yaml).
func TestHTTPStatusCoverage(t *testing.T) {
	seen := map[string]map[int]bool{}
	for _, c := range httpCases {
		e := newEnv(t, c.policy)
		if c.setup != nil {
			c.setup(e)
		}
		r := e.do(c.method, c.path, strings.ReplaceAll(c.body, "{sid}", e.sid), c.header)
		key := r.pattern
		if seen[key] == nil {
			seen[key] = map[int]bool{}
		}
		seen[key][r.status] = true
	}
	for _, rt := range routes {
		got := seen[rt.path]
		for _, s := range rt.statuses {
			assert.True(t, got[s], "%s %s: documented status %d is never produced by a test", rt.method, rt.path, s)
		}
		for s := range got {
			if s == http.StatusMethodNotAllowed {
				continue
			}
			assert.Contains(t, rt.statuses, s, "%s %s answers %d, which is not documented", rt.method, rt.path, s)
		}
	}
}

// TestHTTPConcurrent drives many sessions from many goroutines through the
// handler (run with -race) and checks every log replays to its snapshot.
func TestHTTPConcurrent(t *testing.T) {
	e := newEnv(t, belief.Policy{})
	const sessions, workers, per = 4, 6, 10
	hyps := make([]string, workers*per)
	for i := range hyps {
		hyps[i] = "h" + string(rune('A'+i/26)) + string(rune('a'+i%26))
	}
	hb, _ := json.Marshal(hyps)
	var sids []string
	for range sessions {
		r := e.do("POST", "/v1/sessions", `{`+ontoJSON+`,"hypotheses":`+string(hb)+`}`, nil)
		require.Equal(t, 201, r.status)
		sids = append(sids, r.body["session_id"].(string))
	}
	var wg sync.WaitGroup
	fails := make(chan string, sessions*workers*per)
	for _, sid := range sids {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range per {
					h := hyps[w*per+i]
					body := `{"source_id":"w","observation_id":"` + h + `","eliminated":["` + h + `"]}`
					req := httptest.NewRequest("POST", "/v1/sessions/"+sid+"/eliminate", strings.NewReader(body))
					rec := httptest.NewRecorder()
					e.h.ServeHTTP(rec, req)
					if rec.Code != 200 {
						fails <- rec.Body.String()
					}
					req = httptest.NewRequest("GET", "/v1/sessions/"+sid, nil)
					rec = httptest.NewRecorder()
					e.h.ServeHTTP(rec, req)
					if rec.Code != 200 {
						fails <- rec.Body.String()
					}
				}
			}()
		}
	}
	wg.Wait()
	close(fails)
	for f := range fails {
		t.Fatal(f)
	}
	for _, sid := range sids {
		e.sid = sid
		snap := e.do("GET", "/v1/sessions/{sid}", "", nil)
		assert.Equal(t, float64(0), snap.body["n_survivors"])
		audit := e.do("GET", "/v1/sessions/{sid}/audit", "", nil)
		raw, _ := json.Marshal(audit.body["events"])
		evs, err := belief.DecodeAuditLog(raw)
		require.NoError(t, err)
		assert.Len(t, evs, 1+workers*per)
		st, err := belief.Replay(evs)
		require.NoError(t, err)
		want, _ := json.Marshal(snap.body)
		got, _ := json.Marshal(st.Snapshot())
		assert.JSONEq(t, string(want), string(got))
	}
}

// TestHTTPRestartFileStorage serves sessions from a FileStorage, stops,
// starts a new server on the same directory and finds them unchanged.
func TestHTTPRestartFileStorage(t *testing.T) {
	dir := t.TempDir()
	var fs *belief.FileStorage
	start := func() (*belief.Server, *Handler) {
		var err error
		fs, err = belief.NewFileStorage(dir, trace.FileOptions{})
		require.NoError(t, err)
		b, err := belief.NewServer(context.Background(), fs)
		require.NoError(t, err)
		return b, New(b)
	}
	b, h := start()
	e := &env{t: t, h: h}
	r := e.do("POST", "/v1/sessions", `{`+ontoJSON+`,"hypotheses":["a","b","c"]}`, nil)
	require.Equal(t, 201, r.status)
	e.sid = r.body["session_id"].(string)
	e.mustPost("/v1/sessions/{sid}/eliminate", elimA)
	e.mustPost("/v1/sessions/{sid}/obligations", `{"obligation_id":"ob","min_total_eliminations":1}`)
	before := e.do("GET", "/v1/sessions/{sid}", "", nil)
	auditBefore := e.do("GET", "/v1/sessions/{sid}/audit", "", nil)
	require.NoError(t, b.Close())
	require.NoError(t, fs.Close()) // the directory is locked until then

	b2, h2 := start()
	defer func() { b2.Close(); fs.Close() }()
	e.h = h2
	after := e.do("GET", "/v1/sessions/{sid}", "", nil)
	assert.Equal(t, before.text, after.text)
	assert.Equal(t, auditBefore.text, e.do("GET", "/v1/sessions/{sid}/audit", "", nil).text)
	rep := e.do("POST", "/v1/sessions/{sid}/eliminate", elimA, nil)
	assert.Equal(t, "true", rep.header.Get(HeaderIdempotentReplay))
	ex := e.mustPost("/v1/sessions/{sid}/obligations/ob/exit", `{}`)
	assert.Equal(t, false, ex.body["approved"])
}

func TestStatusOf(t *testing.T) {
	invalid := belief.Declare
	_, _, verr := invalid("", belief.DeclareRequest{}, belief.Stamp{})
	require.ErrorAs(t, verr, new(*belief.ValidationError))
	for _, c := range []struct {
		err    error
		status int
	}{
		{belief.ErrInvalidRequest, 400},
		{verr, 400},
		{belief.ErrInvalidHypothesisID, 400},
		{belief.ErrSessionNotFound, 404},
		{belief.ErrObligationNotFound, 404},
		{belief.ErrEventNotFound, 404},
		{belief.ErrSessionTerminated, 409},
		{belief.ErrConflict, 409},
		{belief.ErrStaleHead, 412},
		{errors.New("disk"), 500},
		{&belief.ReplayError{}, 500},
	} {
		assert.Equal(t, c.status, statusOf(c.err), "%v", c.err)
	}
}

func TestResponsesAreCompactJSONWithoutHTMLEscaping(t *testing.T) {
	e := newEnv(t, belief.Policy{})
	r := e.do("POST", "/v1/sessions", `{`+ontoJSON+`,"hypotheses":["<a&b>"]}`, nil)
	require.Equal(t, 201, r.status)
	assert.True(t, bytes.Contains([]byte(r.text), []byte(`"<a&b>"`)), r.text)
}
