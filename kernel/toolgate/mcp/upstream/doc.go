// Package upstream is how a gateway reaches a remote MCP server over
// streamable HTTP: NewHTTPClient turns a gateway file's server
// (gateway.Server with a URL) into the *http.Client of the MCP SDK's
// StreamableClientTransport, which verifies the server's TLS, sets the
// MCP request headers, and authenticates with the upstream's own
// credentials — never with the client's.
//
//	hc, err := upstream.NewHTTPClient(server, gatewayFileDir, upstream.Options{})
//	up, err := sdk.NewClient(impl, nil).Connect(ctx,
//		&sdk.StreamableClientTransport{Endpoint: server.URL, HTTPClient: hc}, nil)
//	…
//	res, err := up.CallTool(upstream.CallContext(ctx, req), params) // req: the client's request
//
// # TLS
//
// The server's certificate is verified, TLS 1.2 or later, against the
// CAs of its ca_file alone when it names one (PEM, relative to the
// gateway file's directory), else the system's roots. There is no
// option to skip verification. An http URL is accepted to a loopback
// host only. A ca_file that cannot be read or holds no certificate is an
// error of NewHTTPClient; a failed handshake is the request's error,
// `upstream "NAME": TLS with HOST failed: …`. Redirects are not
// followed, so that no credential reaches another URL.
//
// # Credentials
//
// Whatever Authorization header a request has is removed; then the
// upstream's gateway.Auth decides what is sent:
//
//   - none: nothing;
//   - "header": the header (Authorization when unnamed) set to the
//     secret, read once from its file (one trailing line ending
//     dropped) or environment variable when the client is made;
//   - "client_credentials": a token from an OAuth 2.0 client credentials
//     grant (RFC 6749 §4.4) at token_url, the gateway authenticating as
//     client_id with client_secret (HTTP Basic, RFC 6749 §2.3.1), with
//     scope, audience and resource (RFC 8707) when configured;
//   - "token_exchange": the caller's own token exchanged (RFC 8693 §2.1:
//     subject_token, subject_token_type and requested_token_type
//     urn:ietf:params:oauth:token-type:access_token, audience, resource,
//     scope) for one the upstream accepts, the gateway authenticating as
//     its client. A request made without a caller's token — the
//     gateway's own connecting (server/discover, initialize), listing
//     (tools/list and the other lists), listening (subscriptions/listen,
//     the SSE GET), pinging and notifying — carries a client credentials
//     token of the gateway's own instead; any other request without a
//     caller's token (a tools/call, a resources/read) is refused, so that
//     a call is never made on the gateway's authority by mistake.
//
// The caller's token reaches the RoundTripper in the request's context:
// KeepToken, inside the gateway's bearer check, keeps the verified token
// in the request's auth.TokenInfo (the SDK gives a server's handlers the
// TokenInfo, not the HTTP request's context); CallContext moves it into
// the context of the upstream call, which the SDK's client uses for its
// HTTP POST. WithCallerToken does the same for a host that holds the
// token itself. Kept, the token prints as "[caller token]".
//
// Tokens are cached and served until shortly before they expire: 30
// seconds before, or half their lifetime when that is shorter. A token
// without expires_in serves the one request it was fetched for. The
// exchanged tokens are keyed by the SHA-256 of the caller's token and
// the audience (the caller's token itself is never a key), at most
// Options.CacheSize of them (DefaultCacheSize), the least recently used
// going first; concurrent requests for one key wait for one exchange. A
// 401 from the upstream drops the token it refused, so the next request
// fetches a new one. Errors are not cached.
//
// An upstream's 401 or 403 to a POST is the request's error, not a
// response: `upstream "NAME" refused the credentials of tools/call: HTTP
// 403 Forbidden (CHALLENGE)`, wrapping ErrCredential. The SDK's client
// closes its connection on a POST's 4xx that carries no JSON-RPC error
// (streamableClientConn.checkResponse), which would end the upstream
// session every caller shares because one caller's token was refused;
// an error of the HTTP client instead fails that one request
// (jsonrpc2.ErrRejected), which the upstream did not act on.
//
// A grant or an exchange that fails — refused (RFC 6749 §5.2), not
// answered, or answered with something that is not a usable bearer
// token — fails the request before it is sent, with a *CredentialError
// that wraps ErrCredential and names the server, the grant, the token
// endpoint and its error and error_description (printable ASCII, 200
// bytes at most):
//
//	upstream "tickets": the token exchange at https://as.example/token was refused: invalid_grant: subject token expired
//
// The SDK's client returns it from the call; a Guard and Proxy
// (kernel/toolgate/mcp) answer the call with it as an error result and
// charge nothing, because the request was never written to the upstream
// (the Proxy's delivery is reached only when the transport's Write
// succeeds).
//
// # Headers of MCP 2026-07-28
//
// The SDK's client sets Mcp-Method and Mcp-Name itself only on requests
// whose Mcp-Protocol-Version is 2026-07-28 or later (go-sdk v1.8.0,
// mcp/streamable_headers.go: setStandardHeaders), so not after it falls
// back to the 2025-11-25 handshake. The RoundTripper sets both from the
// body of every POSTed single JSON-RPC message, replacing what was set:
// Mcp-Method its method, and Mcp-Name, for tools/call and prompts/get,
// params.name, for resources/read, params.uri. A batch, a response or a
// body that is not JSON is left as it came; so is a value a header
// cannot carry (a control character), which the upstream then refuses.
// Mcp-Param-* headers need the tool's schema: the SDK sets them.
//
// # What it does not do
//
// A 2025-11-25 upstream binds its session to the user of the token that
// opened it (the SDK's streamable server answers 403 "session user
// mismatch" otherwise): token exchange, which sends each caller's own
// token, needs an upstream that speaks 2026-07-28 (stateless) or does
// not bind sessions to users. Secrets are read once: a rotated secret
// takes effect with a new client (a reload). The token endpoint's own
// TLS is verified against the system's roots (Options.TokenClient to
// change it), not the upstream's ca_file.
package upstream
