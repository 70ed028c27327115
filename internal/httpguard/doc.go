// Package httpguard bounds what one HTTP client can hold of a server:
// time (read, write and idle timeouts), memory (a header size limit) and
// connections (a cap on how many are open at once). Every HTTP server
// Verity's commands run — the belief server, `verity view` and
// `verity-mcp -http` — is built here, so that an idle or slow client
// cannot starve a normal one.
//
// # Usage
//
//	lim := httpguard.Defaults()
//	lim.AddFlags(fs)                  // -read-timeout, -max-conns, … in --help
//	// after fs.Parse:
//	if err := lim.Validate(); err != nil { … }   // a usage error
//	ln, _ := net.Listen("tcp", addr)
//	hs, gl := httpguard.New(ln, handler, lim)
//	go hs.Serve(gl)
//
// A route whose response stays open (server-sent events) is wrapped with
// Stream, which replaces the server's whole-request deadlines by
// per-request ones for that route alone.
//
// # What is bounded, and the defaults
//
//   - ReadHeaderTimeout (10 s): the request line and headers must arrive
//     within it — a client sending its headers a byte at a time is cut.
//   - ReadTimeout (30 s): the whole request, body included — a body sent
//     at 1 byte/s is cut.
//   - WriteTimeout (60 s): from the end of the request's headers to the
//     end of the response — a client that never reads its answer is cut.
//   - IdleTimeout (60 s): a keep-alive connection waiting for its next
//     request is closed.
//   - MaxHeaderBytes (64 KiB): larger headers are answered 431.
//   - MaxConns (256): connections open at once, below the usual soft
//     limit of 1,024 open files so that logs and databases still open.
//   - MaxConnsPerClient (64): connections open at once from one client
//     address (its IP), a quarter of MaxConns, so that one client —
//     however slow its requests — leaves three quarters of the slots to
//     the others.
//   - ConnWait (1 s): how long a new connection waits for room before it
//     is closed.
//
// A request body limit is the handler's to set where bodies are expected
// (belief/server's WithMaxBodyBytes, the MCP SDK's MaxRequestBodyBytes);
// the page of `verity view` takes no bodies.
//
// # The connection cap
//
// Listener admits at most MaxConns connections. When it is full, a new
// connection takes the place of one that holds a slot without using it,
// closing it: first the one idle longest between two requests (HTTP lets
// a server close an idle keep-alive connection at any time; clients retry
// on a fresh one), else the one that has been sending its first request's
// headers for longest, once that is more than EvictAfter (250 ms) — a
// client sending its headers at once is never that slow. A connection in
// the middle of a request (its handler running) or hijacked is never
// closed for room. When nothing can be closed, the new connection waits
// up to ConnWait for one to end and is otherwise closed unanswered; once
// the cap has been full for ConnWait with no connection let in, those
// queued behind it (which have waited as long) are closed at once, until
// there is room again — so that the queue is shed rather than each of
// its connections waiting its turn. The
// states come from the http.Server's ConnState hook, which New installs;
// a Listener used without it only caps and waits.
//
// So with a full cap of silent connections, a normal request is answered
// within EvictAfter; with a full cap of requests in progress, it waits for
// one of them to end (each is bounded by ReadTimeout and WriteTimeout).
//
// # The cap per client
//
// One client address may hold at most MaxConnsPerClient of the slots.
// A client at its cap has a new connection take the place of one of its
// own in the same way (its own idle longest, else its own slowest to send
// its first headers, past EvictAfter); when none of its own can be closed
// now — all in requests, as a client sending bodies slowly keeps them, or
// too recently opened — the new connection is closed at once,
// unanswered: it never waits for room, and so never holds up the
// connections of other clients queued behind it. Without this cap, 256 connections sending bodies at a byte
// a second from one address held every slot until ReadTimeout cut them,
// and every other client was closed unanswered after ConnWait.
//
// # Streams
//
// http.Server's ReadTimeout and WriteTimeout are deadlines on the whole
// request: they would cut an event stream that must stay open, and a
// read deadline that passes while the handler runs cancels the request's
// context (net/http's background read). Stream reads the body under
// ReadTimeout, then lifts the read deadline for the rest of the request,
// and sets the write deadline before each write and flush to WriteTimeout
// from then: a stream may stay open as long as its handler keeps it, and
// each write still must reach a client that reads. What ends such a
// stream (an MCP session's idle timeout, for example) is the handler's
// concern.
//
// # One package for every server
//
// verity-mcp, in the nested module kernel/toolgate/mcp, imports this
// package too: Go's rule for internal packages is by import path, and
// that module's path is under this one's, so every server shares one
// implementation and the nested module takes no new dependency.
//
// # What it does not cover
//
// The cap per client counts addresses, not people: clients behind one
// NAT or proxy share one address and its cap (raise
// -max-conns-per-client for them), and a client with many addresses (an
// IPv6 prefix, a botnet) is capped per address only. Request rates are
// not limited (that is a proxy's job). Nothing here authenticates; Verity's servers listen on loopback
// unless told otherwise. TLS is not configured here.
package httpguard
