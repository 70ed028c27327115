package mcp

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// Two eras of MCP meet at a Guard. Before protocol 2026-07-28 a client
// initializes a session and every request rides it; from 2026-07-28
// (SEP-2575) there is no session: each request carries its protocol
// version, client info and capabilities in _meta, and over streamable
// HTTP the SDK serves it on a session of its own that ends with it
// (StreamableHTTPOptions.Stateless; mcp/streamable.go's serveStateless).
// A key made per session would then be a key per request — a fresh
// budget, window and label set for each call — so a request outside any
// session is keyed by who makes it, never by its session or by the
// clientInfo it declares about itself.

// AnonymousCaller is the caller key of a request outside any session
// (Stateless) without an authenticated principal, when Options.Caller is
// nil: every such request shares it — its budget, windows, labels and
// approvals — so that none gets a fresh one by coming alone.
const AnonymousCaller = "anonymous"

// Stateless reports whether req came over HTTP outside any session: a
// request of protocol 2026-07-28 or later, or one to a server that makes
// no session ids. The SDK sets RequestExtra.Header on requests that came
// over HTTP (streamable.go, servePOST), and ServerSession.ID is the
// Mcp-Session-Id, "" without one. Requests over stdio or in memory (no
// header) ride a connection that lasts, whatever their protocol.
func Stateless(req *sdk.CallToolRequest) bool {
	return req != nil && req.Extra != nil && req.Extra.Header != nil && (req.Session == nil || req.Session.ID() == "")
}

// statelessCaller is the default caller key of a Stateless request: its
// principal's key, else AnonymousCaller.
func (gd *Guard) statelessCaller(ctx context.Context, req *sdk.CallToolRequest) string {
	if key := gd.principal(ctx, req).Key(); key != "" {
		return key
	}
	return AnonymousCaller
}

// checkEra refuses a request that breaks its era's rules before anything
// is decided on it: on a connection whose client speaks 2026-07-28 or
// later (it discovered the server, or sent a request with the version in
// _meta: ServerSession.InitializeParams holds it), a request without its
// protocol version in _meta — which the SDK would serve as if it were of
// a session — is refused with the error the SDK answers such a request
// with over HTTP, recorded (gatelog.KindProtocol) and charged nothing.
// Notifications carry no version.
func (gd *Guard) checkEra(ctx context.Context, method string, req sdk.Request) error {
	ss, ok := req.GetSession().(*sdk.ServerSession)
	if !ok || ss == nil || strings.HasPrefix(method, "notifications/") {
		return nil
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.ProtocolVersion < MultiRoundTripVersion {
		return nil
	}
	var meta sdk.Meta
	if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
		meta = p.GetMeta()
	}
	if _, ok := meta[sdk.MetaKeyProtocolVersion].(string); ok {
		return nil
	}
	e := &ProtocolError{Code: CodeInvalidParams, Reason: "missing_version", Method: method,
		Message: fmt.Sprintf("missing _meta %q: this client speaks protocol %s, whose every request carries its protocol version in _meta",
			sdk.MetaKeyProtocolVersion, oneLine(ip.ProtocolVersion))}
	if ctr, ok := req.(*sdk.CallToolRequest); ok && ctr.Params != nil {
		e.Name = ctr.Params.Name
	}
	caller := ""
	if ctr, ok := req.(*sdk.CallToolRequest); ok {
		caller = gd.Caller(ctx, ctr)
	}
	gd.RefuseProtocol(ctx, e, caller)
	return &jsonrpc.Error{Code: e.Code, Message: e.Message}
}

// RefuseProtocol records a request refused for breaking the protocol
// (a ProtocolError) of caller ("" when it cannot be told): one warning on
// Options.Logger and, with Options.Log, a gatelog.KindProtocol entry. It
// changes no budget, window, label or approval.
func (gd *Guard) RefuseProtocol(ctx context.Context, e *ProtocolError, caller string) {
	gd.logger.Warn("refused: "+e.Reason, "method", e.Method, "name", e.Name, "header", e.Header, "code", e.Code,
		"caller", caller, "trace", e.Trace, "why", e.Message)
	if gd.plog == nil {
		return
	}
	payload, err := canon.Marshal(e.Entry(caller))
	if err == nil {
		_, err = gd.plog.Append(context.WithoutCancel(ctx), gatelog.KindProtocol, payload)
	}
	if err != nil {
		gd.logger.Error("recording the protocol refusal", "err", err)
	}
}

// TraceMetaKey is the member of a request's _meta that carries the W3C
// traceparent of the agent's trace (MCP 2026-07-28 carries trace context
// in _meta: "traceparent", and "tracestate").
const TraceMetaKey = "traceparent"

// metaCarrier reads W3C trace context from a request's _meta.
type metaCarrier sdk.Meta

func (m metaCarrier) Get(key string) string { s, _ := m[key].(string); return s }
func (m metaCarrier) Set(string, string)    {}
func (m metaCarrier) Keys() []string        { return []string{TraceMetaKey, "tracestate"} }

var traceContext propagation.TraceContext

// withTraceOf continues the trace of meta's traceparent, when it holds a
// valid one: ctx with its span context as the remote parent (the spans
// kernel/toolgate/otel starts for the call are its children), and its
// trace id (toolgate.Call.Trace) for the call's log entries.
func withTraceOf(ctx context.Context, meta sdk.Meta) (context.Context, string) {
	if _, ok := meta[TraceMetaKey].(string); !ok {
		return ctx, ""
	}
	tctx := traceContext.Extract(ctx, metaCarrier(meta))
	sc := oteltrace.SpanContextFromContext(tctx)
	if !sc.IsValid() || !sc.IsRemote() {
		return ctx, ""
	}
	return tctx, sc.TraceID().String()
}

// TraceID is the trace id of a W3C traceparent, "" when it is not a
// valid one (as propagation.TraceContext reads it).
func TraceID(traceparent string) string {
	_, id := withTraceOf(context.Background(), sdk.Meta{TraceMetaKey: traceparent})
	return id
}

// ProtocolVersions returns the MCP protocol versions a proxy should serve
// (sdk.ServerOptions.SupportedProtocolVersions), newest first: those
// whose calls it can both relay and police — the two eras, 2026-07-28
// without sessions and 2025-11-25 and 2025-06-18 with them. Before
// 2025-06-18 a client has no elicitation, so no human of its could ever
// be asked for an approval, and may send JSON-RPC batches, whose
// requests share one set of HTTP headers; such a client's initialize is
// answered with 2025-11-25, and a request naming an older version in its
// Mcp-Protocol-Version header is refused 400 by the SDK.
func ProtocolVersions() []string { return []string{MultiRoundTripVersion, "2025-11-25", "2025-06-18"} }
