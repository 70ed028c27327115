package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
)

// Both eras of MCP are served at once, on stdio and on -http: clients of
// 2025-11-25 (and 2025-06-18) initialize a session; clients of
// 2026-07-28 discover the server (server/discover) and send each request
// on its own, its protocol version, client info and capabilities in
// _meta. The proxy's server accepts exactly gatemcp.ProtocolVersions.
//
// Who pays is told by who asks, never by a session or by the clientInfo
// a client declares:
//
//   - stdio: one connection, one caller, -caller (either era);
//   - HTTP with -jwks: the token's principal, "ISSUER|SUBJECT", whether
//     the request rides a session (2025) or none (2026): one budget,
//     window, label set and approval set for a principal across both
//     eras and every session;
//   - HTTP without -jwks: the one caller -http-caller names ("http" by
//     default), sessions and stateless requests alike; with
//     -caller-per-session a session is its own caller, and a request
//     outside any session (2026-07-28), having none, is charged to
//     DefaultHTTPCaller — it cannot buy itself a fresh budget by coming
//     alone.

// callerOf is the proxy's Options.Caller (gatemcp): the rule above.
func (c config) callerOf(ctx context.Context, req *sdk.CallToolRequest) string {
	if req.Extra == nil || req.Extra.Header == nil {
		return c.caller // stdio: the SDK sets RequestExtra.Header only on HTTP requests
	}
	session := ""
	if req.Session != nil {
		session = req.Session.ID()
	}
	return c.httpCallerKey(gatemcp.DefaultPrincipal(ctx, req).Key(), session)
}

// httpCallerKey is the caller key of an HTTP request of principal (its
// key, "" unauthenticated) in session ("" for none).
func (c config) httpCallerKey(principal, session string) string {
	switch {
	case c.auth.enabled() && principal != "":
		return principal
	case c.auth.enabled() && session != "":
		return session // unreachable: every verified token has a subject
	case c.auth.enabled():
		return DefaultHTTPCaller // unreachable, as above
	case c.auth.perSession && session != "":
		return session
	case c.httpCaller != "":
		return c.httpCaller
	}
	return DefaultHTTPCaller
}

// eraFront routes each -http request to the SDK's handler for its era —
// stateful (sessions, behind the session cap) for 2025, stateless for
// 2026-07-28 (sdk.StreamableHTTPOptions.Stateless: the SDK's stateful
// handler refuses such requests, streamable.go's servePOST: "this
// server is stateful") — after comparing its headers with its body
// (gatemcp.CheckHeaders): a request whose Mcp-Method, Mcp-Name,
// Mcp-Param-* or Mcp-Protocol-Version disagree with the body, or a
// 2026-07-28 request without its _meta version, is answered 400 with
// the JSON-RPC error (-32020, -32602), logged and recorded on the log
// (gatelog.KindProtocol), and reaches neither the gate nor the upstream.
type eraFront struct {
	stateful, stateless http.Handler
	maxBody             int64
	params              func(tool string) []gatemcp.ParamHeader
	guard               *gatemcp.Guard
	callerKey           func(principal, session string) string
}

func (f *eraFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	modern := r.Header.Get(gatemcp.HeaderProtocolVersion) >= gatemcp.MultiRoundTripVersion
	if r.Method != http.MethodPost || r.Body == nil {
		f.route(modern).ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, f.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	req, ok := gatemcp.ParseRequest(body)
	if !ok {
		f.route(modern).ServeHTTP(w, r) // not one request: the SDK answers it
		return
	}
	if perr := gatemcp.CheckHeaders(r.Header, req, f.params); perr != nil {
		perr.Trace = gatemcp.TraceID(req.Traceparent)
		f.guard.RefuseProtocol(r.Context(), perr, f.callerOf(r))
		writeJSONRPCError(w, http.StatusBadRequest, perr)
		return
	}
	f.route(req.Stateless(r.Header)).ServeHTTP(w, r)
}

func (f *eraFront) route(stateless bool) http.Handler {
	if stateless {
		return f.stateless
	}
	return f.stateful
}

// callerOf is the caller a refused request would have been charged to.
func (f *eraFront) callerOf(r *http.Request) string {
	principal := ""
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		principal = gatemcp.DefaultPrincipal(r.Context(), &sdk.CallToolRequest{Extra: &sdk.RequestExtra{TokenInfo: ti}}).Key()
	}
	return f.callerKey(principal, r.Header.Get(sessionHeader))
}

// writeJSONRPCError answers a refused request with its JSON-RPC error.
func writeJSONRPCError(w http.ResponseWriter, status int, e *gatemcp.ProtocolError) {
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: e.ID, Error: &jsonrpc.Error{Code: e.Code, Message: e.Message}})
	if err != nil {
		http.Error(w, e.Message, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
