package mcp

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// The MCP request headers of protocol 2026-07-28 (SEP-2243) that repeat
// parts of the body, so that a router can route without reading it, and
// the header that names the protocol version.
const (
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
	HeaderParamPrefix     = "Mcp-Param-"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
)

// The JSON-RPC error codes of a ProtocolError: MCP's header mismatch
// (sdk.CodeHeaderMismatch, mcp/shared.go) and JSON-RPC's invalid params,
// which the SDK answers a 2026-07-28 request without its _meta version
// with (streamable.go: "missing or invalid _meta field").
const (
	CodeHeaderMismatch = sdk.CodeHeaderMismatch // -32020
	CodeInvalidParams  = jsonrpc.CodeInvalidParams
)

// The base64 form of a header value (SEP-2243): "=?base64?", the value's
// UTF-8 in standard base64, "?=" — as the SDK writes and reads it
// (encodeBase64, decodeHeaderValue in mcp/streamable_headers.go).
const (
	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

// ProtocolError is an MCP request refused before any decision: its HTTP
// headers disagree with its body (Reason "header_mismatch", Code
// CodeHeaderMismatch), or it is a request of protocol 2026-07-28 or later
// without its protocol version in _meta (Reason "missing_version", Code
// CodeInvalidParams). It is answered 400 with a JSON-RPC error carrying
// Code and Message, and recorded (Guard.RefuseProtocol).
type ProtocolError struct {
	Code    int64
	Reason  string
	Header  string // the header that disagreed, for a header_mismatch
	Message string // one line
	// ID, Method and Name are the request's, as the body has them.
	ID     jsonrpc.ID
	Method string
	Name   string
	// Trace is the trace id of the request's traceparent, when it has one.
	Trace string
}

func (e *ProtocolError) Error() string { return e.Message }

// Entry is the log's record of e for a request of caller.
func (e *ProtocolError) Entry(caller string) gatelog.Protocol {
	return gatelog.Protocol{Caller: caller, Method: e.Method, Name: e.Name, Reason: e.Reason, Header: e.Header,
		Code: int(e.Code), Explanation: e.Message, Trace: e.Trace}
}

// ParamHeader is one x-mcp-header annotation of a tool's input schema
// (SEP-2243): the argument at Path (property names, outermost first) is
// carried in the header Mcp-Param-<Header> as well as in the body.
type ParamHeader struct {
	Path   []string
	Header string
}

// ParamHeadersOf reads the x-mcp-header annotations of an input schema
// (a tool's inputSchema as listed), at any depth of "properties", in no
// particular order. A schema it cannot read has none.
func ParamHeadersOf(schema []byte) []ParamHeader {
	var s schemaProps
	if err := sjson.Unmarshal(schema, &s); err != nil {
		return nil
	}
	return collectParamHeaders(s.Properties, nil, nil)
}

type schemaProps struct {
	XMCPHeader sjson.RawMessage       `json:"x-mcp-header"`
	Properties map[string]schemaProps `json:"properties"`
}

func collectParamHeaders(props map[string]schemaProps, prefix []string, out []ParamHeader) []ParamHeader {
	for name, p := range props {
		path := append(slices.Clip(prefix), name)
		var h string
		if err := sjson.Unmarshal(p.XMCPHeader, &h); err == nil && h != "" {
			out = append(out, ParamHeader{Path: path, Header: h})
		}
		out = collectParamHeaders(p.Properties, path, out)
	}
	return out
}

// Request is what the header checks read of one JSON-RPC message of an
// HTTP POST body, decoded as the SDK decodes it (jsonrpc.DecodeMessage;
// params with segmentio's decoder matching member names exactly, as the
// SDK's internal/json does), so that the checks compare the headers with
// what the server will act on.
type Request struct {
	// Call is a request with an id (not a notification); Batch reports
	// a body that is a JSON array.
	Call, Batch bool
	ID          jsonrpc.ID
	Method      string
	// Name is what Mcp-Name must repeat: a tools/call's or prompts/get's
	// name, a resources/read's uri; Named reports whether the method has
	// one.
	Name  string
	Named bool
	// Version is _meta's io.modelcontextprotocol/protocolVersion ("" when
	// absent or not a string), Traceparent _meta's traceparent.
	Version     string
	Traceparent string
	arguments   map[string]sjson.RawMessage
}

// ParseRequest reads the JSON-RPC request of a POST body; ok is false for
// a body that is not one request (a response, a notification-less batch,
// malformed JSON), which the SDK answers itself. A batch reports Batch
// and nothing else.
func ParseRequest(body []byte) (r Request, ok bool) {
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		return Request{Batch: true}, true
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return Request{}, false
	}
	jreq, isReq := msg.(*jsonrpc.Request)
	if !isReq {
		return Request{}, false
	}
	r = Request{Call: jreq.IsCall(), ID: jreq.ID, Method: jreq.Method}
	var p struct {
		Name      string                      `json:"name"`
		URI       string                      `json:"uri"`
		Arguments sjson.RawMessage            `json:"arguments"`
		Meta      map[string]sjson.RawMessage `json:"_meta"`
	}
	if len(jreq.Params) > 0 {
		dec := sjson.NewDecoder(bytes.NewReader(jreq.Params))
		dec.DontMatchCaseInsensitiveStructFields()
		if err := dec.Decode(&p); err != nil {
			// Params the server cannot read either: it refuses the call.
			p.Name, p.URI, p.Arguments, p.Meta = "", "", nil, nil
		}
	}
	var args map[string]sjson.RawMessage
	_ = sjson.Unmarshal(p.Arguments, &args) // arguments that are not an object have no annotated member
	switch r.Method {
	case MethodCallTool, "prompts/get":
		r.Name, r.Named = p.Name, true
	case "resources/read":
		r.Name, r.Named = p.URI, true
	}
	r.arguments = args
	if r.Call {
		_ = sjson.Unmarshal(p.Meta[sdk.MetaKeyProtocolVersion], &r.Version)
	}
	_ = sjson.Unmarshal(p.Meta["traceparent"], &r.Traceparent)
	return r, true
}

// Stateless reports whether r follows protocol 2026-07-28 or later, with
// no session, as the SDK tells it (streamable.go's ephemeralConnectOpts
// and checks in streamableServerConn.servePOST): its Mcp-Protocol-Version
// header, or its _meta version, is 2026-07-28 or later.
func (r Request) Stateless(h http.Header) bool {
	return h.Get(HeaderProtocolVersion) >= MultiRoundTripVersion || (r.Call && r.Version >= MultiRoundTripVersion)
}

// CheckHeaders compares a POST's headers with its request r before
// anything is decided on it, and returns the first disagreement, nil
// when there is none. params returns the x-mcp-header annotations of a
// tool (nil for a tool without, or unknown). The rules, strict where the
// SDK's own check (validateMcpHeaders) is lenient, since a router in
// front may route on any of them:
//
//   - a 2026-07-28 request (Stateless) must carry its version in _meta,
//     equal to its Mcp-Protocol-Version header, and an Mcp-Method header,
//     and an Mcp-Name for a method that names something;
//   - on any protocol, an Mcp-Method or Mcp-Name header that is present
//     must equal the body's method or name, and Mcp-Name on a method that
//     names nothing is refused;
//   - each Mcp-Param-* header must be one of the tool's annotations (the
//     upstream's listed input schema: the SDK checks only the tools
//     registered on its own server, which for a proxy are placeholders)
//     and equal its argument — its value, or the UTF-8 in the
//     "=?base64?…?=" form; an argument that is present (not null) needs
//     its header on 2026-07-28;
//   - none of these headers may be given twice (which one would a router
//     read?), nor on a batch, whose requests share one set of headers.
func CheckHeaders(h http.Header, r Request, params func(tool string) []ParamHeader) *ProtocolError {
	mismatch := func(header, format string, args ...any) *ProtocolError {
		return &ProtocolError{Code: CodeHeaderMismatch, Reason: "header_mismatch", Header: header, ID: r.ID, Method: r.Method, Name: r.Name,
			Message: oneLine("header mismatch: " + fmt.Sprintf(format, args...))}
	}
	var paramHeaders []string
	for k, vs := range h {
		ck := http.CanonicalHeaderKey(k)
		isParam := strings.HasPrefix(ck, HeaderParamPrefix)
		if isParam {
			paramHeaders = append(paramHeaders, ck)
		}
		if (ck == HeaderMethod || ck == HeaderName || ck == HeaderProtocolVersion || isParam) && len(vs) > 1 {
			return mismatch(ck, "%s given %d times", ck, len(vs))
		}
	}
	if r.Batch {
		for _, k := range []string{HeaderMethod, HeaderName} {
			if h.Get(k) != "" {
				return mismatch(k, "%s on a batch, whose requests it cannot all name", k)
			}
		}
		if len(paramHeaders) > 0 {
			return mismatch(paramHeaders[0], "%s on a batch, whose requests it cannot all name", paramHeaders[0])
		}
		return nil
	}
	stateless := r.Stateless(h)
	if stateless && r.Call {
		hv := h.Get(HeaderProtocolVersion)
		switch {
		case r.Version == "":
			return &ProtocolError{Code: CodeInvalidParams, Reason: "missing_version", ID: r.ID, Method: r.Method, Name: r.Name,
				Message: fmt.Sprintf("missing _meta %q: a request of protocol %s carries its protocol version in _meta", sdk.MetaKeyProtocolVersion, oneLine(hv))}
		case hv == "":
			return mismatch(HeaderProtocolVersion, "%s is required for a request whose _meta names protocol %s", HeaderProtocolVersion, oneLine(r.Version))
		case hv != r.Version:
			return mismatch(HeaderProtocolVersion, "%s %q does not match _meta's protocol version %q", HeaderProtocolVersion, hv, r.Version)
		}
	}
	switch hm := h.Get(HeaderMethod); {
	case hm == "" && stateless:
		return mismatch(HeaderMethod, "%s is required on protocol %s", HeaderMethod, MultiRoundTripVersion)
	case hm != "" && hm != r.Method:
		return mismatch(HeaderMethod, "%s %q does not match the body's method %q", HeaderMethod, hm, r.Method)
	}
	switch hn, present := h.Get(HeaderName), len(h.Values(HeaderName)) > 0; {
	case present && !r.Named:
		return mismatch(HeaderName, "%s on a %s request, which names nothing", HeaderName, r.Method)
	case !present && r.Named && stateless:
		return mismatch(HeaderName, "%s is required for %s on protocol %s", HeaderName, r.Method, MultiRoundTripVersion)
	case present && hn != r.Name:
		return mismatch(HeaderName, "%s %q does not match the body's %q", HeaderName, hn, r.Name)
	}
	if r.Method != MethodCallTool {
		if len(paramHeaders) > 0 {
			return mismatch(paramHeaders[0], "%s on a %s request, which has no arguments", paramHeaders[0], r.Method)
		}
		return nil
	}
	var bindings []ParamHeader
	if params != nil {
		bindings = params(r.Name)
	}
	for _, k := range paramHeaders {
		if !slices.ContainsFunc(bindings, func(b ParamHeader) bool { return strings.EqualFold(HeaderParamPrefix+b.Header, k) }) {
			return mismatch(k, "%s names no x-mcp-header parameter of tool %q", k, r.Name)
		}
	}
	for _, b := range bindings {
		k := HeaderParamPrefix + b.Header
		hv, present := h.Get(k), len(h.Values(k)) > 0
		arg, has := argumentAt(r.arguments, b.Path)
		path := strings.Join(b.Path, ".")
		if !has {
			if present {
				return mismatch(k, "%s given for argument %q, which is absent or null", k, path)
			}
			continue
		}
		if !present {
			if stateless {
				return mismatch(k, "%s is required for argument %q", k, path)
			}
			continue
		}
		decoded, ok := DecodeHeaderValue(hv)
		if !ok {
			return mismatch(k, "%s is not valid %s…%s base64", k, base64Prefix, base64Suffix)
		}
		if !primitiveEquals(decoded, arg) {
			return mismatch(k, "%s does not match argument %q", k, path)
		}
	}
	return nil
}

// argumentAt is the argument at path, when present and not null.
func argumentAt(args map[string]sjson.RawMessage, path []string) (sjson.RawMessage, bool) {
	if len(path) == 0 || args == nil {
		return nil, false
	}
	cur, ok := args[path[0]]
	for _, part := range path[1:] {
		if !ok {
			return nil, false
		}
		var obj map[string]sjson.RawMessage
		if err := sjson.Unmarshal(cur, &obj); err != nil {
			return nil, false
		}
		cur, ok = obj[part]
	}
	if !ok || strings.TrimSpace(string(cur)) == "null" {
		return nil, false
	}
	return cur, true
}

// DecodeHeaderValue reads a header value of SEP-2243: the text itself,
// or, in the form "=?base64?…?=", the UTF-8 its standard base64 encodes;
// ok is false for that form with invalid base64 or a value that is not
// UTF-8.
func DecodeHeaderValue(v string) (string, bool) {
	if inner, ok := strings.CutPrefix(v, base64Prefix); ok {
		if inner, ok = strings.CutSuffix(inner, base64Suffix); ok {
			b, err := base64.StdEncoding.Strict().DecodeString(inner)
			if err != nil || !validUTF8(b) {
				return "", false
			}
			return string(b), true
		}
	}
	return v, true
}

func validUTF8(b []byte) bool { return strings.ToValidUTF8(string(b), "\uFFFD") == string(b) }

// primitiveEquals reports whether a header's (decoded) text is the
// argument raw: a string equal to it, "true" or "false" for a boolean, a
// decimal integer of the same value for an integer within ±(2^53−1).
// Anything else — a number with a fraction, an object, an array — never
// is: x-mcp-header may only annotate strings, integers and booleans.
func primitiveEquals(text string, raw sjson.RawMessage) bool {
	var v any
	if err := sjson.Unmarshal(raw, &v); err != nil {
		return false
	}
	switch b := v.(type) {
	case string:
		return text == b
	case bool:
		return text == strconv.FormatBool(b)
	case float64:
		const maxSafe = 1<<53 - 1
		if b != math.Trunc(b) || b > maxSafe || b < -maxSafe {
			return false
		}
		n, err := strconv.ParseInt(text, 10, 64)
		return err == nil && float64(n) == b
	}
	return false
}

// oneLine is s as the gate writes an explanation: one line.
func oneLine(s string) string { return toolgate.OneLine(s) }
