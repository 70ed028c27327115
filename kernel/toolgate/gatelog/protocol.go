package gatelog

import "fmt"

// KindProtocol records an MCP request refused before any decision for
// breaking the protocol's rules about where its parts travel: HTTP
// headers that disagree with the body they ride with (Mcp-Method,
// Mcp-Name, Mcp-Param-*, Mcp-Protocol-Version; JSON-RPC error -32020),
// or a request of protocol 2026-07-28 or later without its protocol
// version in _meta (-32602). Such a request reaches no gate, no human
// and no server, and changes no budget: the entry is the only trace it
// leaves, so that a router fooled by the headers shows on the log.
const KindProtocol = "toolgate.protocol"

// Protocol is the payload of a KindProtocol entry.
//
// Reason is "header_mismatch" (Header names the header, Code is -32020)
// or "missing_version" (Code is -32602). Caller is the caller key the
// request would have been charged to ("" when it could not be told),
// Method and Name what the body asked for (Name: a tools/call's tool, a
// prompts/get's prompt, a resources/read's URI), Explanation the one
// line the client was answered, Trace the W3C trace id of the
// request's traceparent, when it carried one.
type Protocol struct {
	Caller      string `json:"caller"`
	Method      string `json:"method"`
	Name        string `json:"name,omitempty"`
	Reason      string `json:"reason"`
	Header      string `json:"header,omitempty"`
	Code        int    `json:"code"`
	Explanation string `json:"explanation"`
	Trace       string `json:"trace,omitempty"`
}

// The JSON-RPC error codes a Protocol entry names: MCP's header mismatch
// (2026-07-28) and JSON-RPC's invalid params.
const (
	codeHeaderMismatch = -32020
	codeInvalidParams  = -32602
)

// decodeProtocol reads a Protocol whose reason, code and header agree.
func decodeProtocol(payload []byte) (any, error) {
	var p Protocol
	if err := decodeStrict(payload, &p); err != nil {
		return nil, err
	}
	switch {
	case p.Reason == "header_mismatch" && (p.Code != codeHeaderMismatch || p.Header == ""):
		return nil, fmt.Errorf("%w: a header_mismatch entry names its header and code %d", ErrDecode, codeHeaderMismatch)
	case p.Reason == "missing_version" && (p.Code != codeInvalidParams || p.Header != ""):
		return nil, fmt.Errorf("%w: a missing_version entry has code %d and no header", ErrDecode, codeInvalidParams)
	case p.Reason != "header_mismatch" && p.Reason != "missing_version":
		return nil, fmt.Errorf("%w: /reason: %q is not header_mismatch or missing_version", ErrDecode, p.Reason)
	case p.Method == "" || p.Explanation == "":
		return nil, fmt.Errorf("%w: a protocol entry names its method and explanation", ErrDecode)
	case p.Trace != "" && !validTraceID(p.Trace):
		return nil, fmt.Errorf("%w: /trace: %.40q is not 32 lower-case hex digits, not all zero", ErrDecode, p.Trace)
	}
	return p, nil
}

// validTraceID reports whether id is a W3C trace-id: 32 lower-case hex
// digits, not all zero.
func validTraceID(id string) bool {
	if len(id) != 32 {
		return false
	}
	zero := true
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		default:
			return false
		}
		zero = zero && c == '0'
	}
	return !zero
}

// optionalTrace checks that a Refuse's or Result's trace is "" or a
// W3C trace id.
func optionalTrace(id string) error {
	if id == "" || validTraceID(id) {
		return nil
	}
	return fmt.Errorf("%w: /trace: %.40q is not 32 lower-case hex digits, not all zero", ErrDecode, id)
}
