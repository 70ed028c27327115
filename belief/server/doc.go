// Package server serves belief sessions over HTTP/JSON: the endpoints of
// the specification's §3.1 on top of a belief.Server, with net/http only
// and an OpenAPI 3.1 document (api/openapi.yaml) that the tests hold to
// the handler.
//
// # Usage
//
//	b, err := belief.NewServer(ctx, belief.NewMemoryStorage())
//	defer b.Close()
//	h := server.New(b, server.WithLogger(slog.Default()))
//	err = http.ListenAndServe("127.0.0.1:8080", h)
//
// Then, from any client:
//
//	POST /v1/sessions {"ontology":{…},"hypotheses":["disk","network","config"]}
//	  → 201 {"session_id":"…","snapshot":{…}}
//	POST /v1/sessions/{id}/eliminate {"source_id":"adapter://sre","observation_id":"probe-1","eliminated":["disk"]}
//	  → 200 {"applied_eliminated":["disk"],"ignored_eliminated":[],"snapshot":{…},"audit_event_id":"…"}
//	GET  /v1/sessions/{id}/audit
//	  → 200 {"events":[…]} (read them with belief.DecodeAuditLog, check them with belief.Replay)
//
// ExampleNew runs such a session end to end; examples/beliefserver is a
// complete server (memory or file storage, flags, graceful shutdown).
//
// # Authentication and ownership
//
// WithAuthenticator(a) makes every request authenticate first: a
// request a refuses is answered 401 UNAUTHENTICATED with
// WWW-Authenticate: Bearer realm="verity" and the same body whatever the
// reason (the reason is logged, never sent). Authenticator is one method,
// Authenticate(*http.Request) (Principal, error), so that a signed-token
// validator can come from a module with its own dependencies; TokenFile
// is the one in this package: a file of SHA-256 digests of static bearer
// tokens,
//
//	# sha256:HEX SUBJECT [GROUP,GROUP...]
//	sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 alice ops,admins
//
// parsed strictly (ParseTokenFile: a *TokenFileError names the first bad
// line), holding no token itself, and comparing the digest of a
// request's token with every line in constant time (crypto/subtle). With
// an Authenticator, the request log line carries "principal" (its Key).
//
// A session belongs to the principal that declared it: DECLARE_SESSION
// records Principal.Key as the session's owner (belief.DeclareRequest.Owner;
// a client cannot set it), so the owner survives restarts in every
// storage. Every route of a session whose owner is not the caller's
// principal answers 404 SESSION_NOT_FOUND, word for word the answer for
// an id that names no session, so that nobody learns which ids exist.
// Fail closed: a session declared without authentication (no owner,
// including every session written before owners were recorded) is
// served only by a Handler without an Authenticator, and an owned one
// only to its owner, never anonymously. To hand an ownerless session to
// a principal, replay its audit log into a new session.
//
// # Endpoints
//
//	POST /v1/sessions                                          DECLARE_SESSION      201
//	GET  /v1/sessions/{session_id}                             QUERY_BELIEF         200
//	POST /v1/sessions/{session_id}/eliminate                   ELIMINATE            200
//	GET  /v1/sessions/{session_id}/audit[?since_event_id=…]    AUDIT_TRACE          200
//	POST /v1/sessions/{session_id}/obligations                 ENTER_OBLIGATION     200
//	POST /v1/sessions/{session_id}/obligations/{id}/exit       REQUEST_EXIT         200
//	POST /v1/sessions/{session_id}/conclusions                 DECLARE_CONCLUSION   200
//	POST /v1/sessions/{session_id}/terminate                   REQUEST_TERMINATION  200
//
// api/openapi.yaml (OpenAPI 3.1) describes exactly this; TestOpenAPI*
// check it against the handler's route table, its decoders and real
// responses, and TestHTTPStatusCoverage shows every documented status is
// produced and nothing else is.
//
// # Requests
//
// A body is one JSON object of at most DefaultMaxBodyBytes (1 MiB,
// WithMaxBodyBytes to change; a larger one is 413, see Oversized bodies);
// an empty body reads as {}. It is read as strict JSON, as every Verity
// decoder reads (REFERENCE.md, "One way to read JSON"; null here is
// "absent"), and a body session_id (or exit obligation_id) that disagrees
// with the path is rejected. All problems are reported at once: the answer is 400 INVALID_REQUEST with
// details.violations, a list of {"path","rule","message"} sorted by path,
// where path is an RFC 6901 JSON Pointer into the body ("" for all of
// it, "/hypotheses/1"; for the audit query, "/since_event_id") and rule
// one of belief's stable rule names (belief.RuleSyntax, "syntax", and the
// others). The core's own checks answer in the same form.
//
// If-Match carries the audit head event id a mutation expects (quoted,
// bare, or "*"); every response about a session has ETag set to its audit
// head. A stale If-Match is 412 with code CONFLICT.
//
// # Oversized bodies
//
// A body over the limit is answered 413 CONTENT_TOO_LARGE, with
// details.limit_bytes and Connection: close, before any of the body is
// read when Content-Length declares it, otherwise as soon as the bytes
// read pass the limit. Over HTTP/1 the handler then reads and discards the
// rest of the body, at most 64 MiB for at most 5 seconds, before the
// connection closes (a lingering close): a client that writes its whole
// body before reading the answer, as Python's urllib and requests do,
// reads the 413 instead of a connection reset, which is what net/http
// alone gives it (it discards at most 256 KiB, then closes with the rest
// unread). Nothing is drained for a client that waits for 100 Continue
// (it gets the 413 instead) or for a Content-Length over 64 MiB.
//
// Mounted in an http.Server of one's own, the Handler needs nothing more.
// It reaches the connection through http.ResponseController, so
// middleware that wraps the ResponseWriter should have an Unwrap method,
// as net/http's own wrappers do. Without one the read deadline cannot be
// set: the body is then drained only when the http.Server has a
// ReadTimeout, which bounds the drain, and the 413 is sent after it;
// without a ReadTimeout nothing is drained (a client still sending may see
// a reset), so that a client that declares a large body and goes silent
// never holds a handler. The drain sets the connection's read deadline 5
// seconds ahead, in place of what remains of ReadTimeout.
//
// The drain's cost: each oversized request may keep its connection and
// handler goroutine for up to 5 seconds and 64 MiB of reading. At most 64
// requests drain at once; an oversized request beyond those is answered
// 413 without a drain. Set the limit with WithMaxBodyBytes rather than
// http.MaxBytesHandler: that one's limit is answered 413 too, but
// net/http then closes without draining.
// Over HTTP/2 the 413 ends the stream and nothing needs draining.
//
// # Errors
//
// Every error is {"error":{"code","message","details"}}:
// INVALID_REQUEST and INVALID_HYPOTHESIS_ID 400; SESSION_NOT_FOUND,
// OBLIGATION_NOT_FOUND and EVENT_NOT_FOUND 404; SESSION_TERMINATED and
// CONFLICT 409; stale If-Match 412 CONFLICT; a body over the limit 413
// CONTENT_TOO_LARGE; a storage failure or a log that no longer replays
// 500 INTERNAL (logged, not sent). Bad input is never a 500: FuzzHandler
// and FuzzDecoders check it.
//
// # Not covered
//
// No authentication, TLS or rate limiting: mount the Handler behind what
// the host already uses. No listing or deletion of sessions.
//
// The Handler bounds request bodies, not connections: give its
// http.Server a ReadHeaderTimeout, a ReadTimeout (which also bounds a
// body sent slowly), a WriteTimeout, an IdleTimeout, a MaxHeaderBytes
// and a cap on open connections, or one idle or slow client per file
// descriptor starves the rest. examples/beliefserver sets them all, as
// flags.
package server
