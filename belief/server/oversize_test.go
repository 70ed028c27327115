// Oversized bodies over loopback (raw TCP and http.Client, declared and
// chunked), and the tests that check them: a 413 the client reads, not a
// reset (TestOversizedBodyIsAnswered413NotReset), before the body when
// Content-Length declares it (TestOversizedContentLengthIsAnsweredBeforeTheBody),
// no drain for 100 Continue (TestOversizedExpectContinueIsNotDrained), a
// bounded drain (TestOversizedBodyDrainIsBounded), none that nothing would
// end (TestOversizedBodyBehindOpaqueWriterNeverHangs), at most so many at
// once (TestOversizedBodyDrainsAreCapped), and the limits of
// http.MaxBytesHandler and WithMaxBodyBytes (TestMaxBytesHandlerInFrontIsAnswered413,
// TestBodyOverLimitIs413).

package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/verity-go/verity/belief"
	"pgregory.net/rapid"
)

// bigBody is the size of an oversized body as common clients send it:
// all at once, without Expect: 100-continue, reading the answer only
// after the last byte is written.
const bigBody = 20 << 20

// serve runs h in an http.Server on loopback, set up as
// examples/beliefserver sets up its own, and returns its address.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	return serveWith(t, &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second})
}

// serveWith runs hs on loopback and returns its address.
func serveWith(t *testing.T, hs *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return ln.Addr().String()
}

// writeChunked writes n bytes of body in chunked transfer coding.
func writeChunked(w io.Writer, n int) error {
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	bw := bufio.NewWriterSize(w, 128<<10)
	for n > 0 {
		c := chunk[:min(n, len(chunk))]
		if _, err := fmt.Fprintf(bw, "%x\r\n%s\r\n", len(c), c); err != nil {
			return err
		}
		n -= len(c)
	}
	if _, err := io.WriteString(bw, "0\r\n\r\n"); err != nil {
		return err
	}
	return bw.Flush()
}

// rawRequest is one request written on a fresh TCP connection: the head,
// then n bytes of body (chunked or plain), all before reading anything.
type rawRequest struct {
	path    string
	chunked bool
	n       int
	header  string // extra header lines, each ending in \r\n
}

func (q rawRequest) head() string {
	h := "POST " + q.path + " HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n" + q.header
	if q.chunked {
		return h + "Transfer-Encoding: chunked\r\n\r\n"
	}
	return h + fmt.Sprintf("Content-Length: %d\r\n\r\n", bigBody)
}

func (q rawRequest) writeBody(w io.Writer) error {
	if q.chunked {
		return writeChunked(w, q.n)
	}
	_, err := w.Write(bytes.Repeat([]byte("x"), q.n))
	return err
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(60*time.Second)))
	return conn
}

// readResponse reads one response and its whole body from conn.
func readResponse(t *testing.T, conn net.Conn) (*http.Response, []byte) {
	t.Helper()
	return readResponseFrom(t, bufio.NewReader(conn))
}

// readResponseFrom is readResponse from br, for a caller that reads on
// (to see the connection close).
func readResponseFrom(t *testing.T, br *bufio.Reader) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err, "the client reads an answer, not a reset")
	text, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, text
}

// assertTooLarge checks a 413 with the error envelope for limit.
func assertTooLarge(t require.TestingT, resp *http.Response, text []byte, limit int64) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, string(text))
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var out errorBody
	require.NoError(t, json.Unmarshal(text, &out), string(text))
	assert.Equal(t, CodeContentTooLarge, out.Error.Code)
	assert.Equal(t, fmt.Sprintf("request body exceeds %d bytes", limit), out.Error.Message)
	assert.Equal(t, float64(limit), out.Error.Details["limit_bytes"])
}

// TestOversizedBodyIsAnswered413NotReset: a client that writes a whole
// 20 MiB body before reading — declared by Content-Length or chunked —
// reads 413 with the error envelope, not a connection reset; so does
// Go's http.Client.
func TestOversizedBodyIsAnswered413NotReset(t *testing.T) {
	e := newEnv(t, belief.Policy{})
	addr := serve(t, e.h)
	// Behind middleware whose ResponseWriter has no Unwrap, in a server
	// with a ReadTimeout (which bounds the drain), the answer waits for
	// the drain, but still arrives.
	opaque := serveWith(t, &http.Server{ReadTimeout: 30 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.h.ServeHTTP(struct{ http.ResponseWriter }{w}, r)
	})})
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("raw behind opaque middleware chunked=%v", chunked), func(t *testing.T) {
			conn := dial(t, opaque)
			q := rawRequest{path: "/v1/sessions", chunked: chunked, n: bigBody}
			_, err := io.WriteString(conn, q.head())
			require.NoError(t, err)
			require.NoError(t, q.writeBody(conn), "the server reads the whole body")
			resp, text := readResponse(t, conn)
			assertTooLarge(t, resp, text, testBodyLimit)
		})
	}
	for _, path := range []string{"/v1/sessions", "/v1/sessions/" + e.sid + "/eliminate"} {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("raw %s chunked=%v", path, chunked), func(t *testing.T) {
				conn := dial(t, addr)
				q := rawRequest{path: path, chunked: chunked, n: bigBody}
				_, err := io.WriteString(conn, q.head())
				require.NoError(t, err)
				require.NoError(t, q.writeBody(conn), "the server reads the whole body")
				resp, text := readResponse(t, conn)
				assertTooLarge(t, resp, text, testBodyLimit)
				assert.True(t, resp.Close, "the connection closes after the answer")
			})
			t.Run(fmt.Sprintf("http.Client %s chunked=%v", path, chunked), func(t *testing.T) {
				var body io.Reader = bytes.NewReader(bytes.Repeat([]byte("x"), bigBody))
				if chunked {
					body = io.MultiReader(body) // hides the length: chunked
				}
				req, err := http.NewRequest("POST", "http://"+addr+path, body)
				require.NoError(t, err)
				client := &http.Client{Timeout: 60 * time.Second}
				resp, err := client.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				text, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				assertTooLarge(t, resp, text, testBodyLimit)
			})
		}
	}
	// The server still serves after all that.
	resp, err := http.Get("http://" + addr + "/v1/sessions/" + e.sid)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestOversizedContentLengthIsAnsweredBeforeTheBody: a declared
// Content-Length above the limit is answered 413 before any of the body
// is read.
func TestOversizedContentLengthIsAnsweredBeforeTheBody(t *testing.T) {
	e := newEnv(t, belief.Policy{})
	conn := dial(t, serve(t, e.h))
	_, err := io.WriteString(conn, rawRequest{path: "/v1/sessions"}.head())
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	resp, text := readResponse(t, conn)
	assertTooLarge(t, resp, text, testBodyLimit)
}

// TestOversizedExpectContinueIsNotDrained: a client that waits for
// 100 Continue is answered 413 instead, and the connection closes at
// once — the server does not wait for a body that will not come.
func TestOversizedExpectContinueIsNotDrained(t *testing.T) {
	e := newEnv(t, belief.Policy{})
	conn := dial(t, serve(t, e.h))
	_, err := io.WriteString(conn, rawRequest{path: "/v1/sessions", header: "Expect: 100-continue\r\n"}.head())
	require.NoError(t, err)
	start := time.Now()
	br := bufio.NewReader(conn)
	resp, text := readResponseFrom(t, br)
	assertTooLarge(t, resp, text, testBodyLimit)
	_, err = br.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "the server closes the connection")
	assert.Less(t, time.Since(start), drainTime/2, "without waiting for a body")
}

// TestOversizedBodyDrainIsBounded: the discarding after a 413 ends after
// drainTime for a client that stops sending, and after drainBytes for one
// that sends without end; either way the connection is closed.
func TestOversizedBodyDrainIsBounded(t *testing.T) {
	t.Run("time", func(t *testing.T) {
		e := newEnv(t, belief.Policy{})
		e.h.drainTime = 200 * time.Millisecond
		conn := dial(t, serve(t, e.h))
		q := rawRequest{path: "/v1/sessions"}
		_, err := io.WriteString(conn, q.head()+strings.Repeat("x", 1<<20)) // then nothing more
		require.NoError(t, err)
		start := time.Now()
		br := bufio.NewReader(conn)
		resp, text := readResponseFrom(t, br)
		assertTooLarge(t, resp, text, testBodyLimit)
		_, err = br.ReadByte()
		require.Error(t, err, "the server closes the connection")
		assert.Less(t, time.Since(start), 5*time.Second)
	})
	t.Run("bytes", func(t *testing.T) {
		e := newEnv(t, belief.Policy{})
		e.h.drainBytes = 64 << 10
		conn := dial(t, serve(t, e.h))
		q := rawRequest{path: "/v1/sessions", chunked: true, n: bigBody}
		written := make(chan error, 1)
		go func() {
			_, err := io.WriteString(conn, q.head())
			written <- errors.Join(err, q.writeBody(conn))
		}()
		resp, text := readResponse(t, conn)
		assertTooLarge(t, resp, text, testBodyLimit)
		assert.Error(t, <-written, "the server stops reading after drainBytes")
	})
}

// TestOversizedBodyBehindOpaqueWriterNeverHangs: behind a ResponseWriter
// wrapper without Unwrap (no read deadline can be set) in a server without
// ReadTimeout, a client that declares a 20 MiB body, sends 10 bytes and
// goes silent neither holds the handler nor waits for its answer: nothing
// is drained, the 413 is sent and the connection closed.
func TestOversizedBodyBehindOpaqueWriterNeverHangs(t *testing.T) {
	e := newEnv(t, belief.Policy{})
	returned := make(chan struct{}, 1)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.h.ServeHTTP(struct{ http.ResponseWriter }{w}, r)
		returned <- struct{}{}
	}))
	conn := dial(t, addr)
	_, err := io.WriteString(conn, rawRequest{path: "/v1/sessions"}.head()+"0123456789")
	require.NoError(t, err)
	select {
	case <-returned:
	case <-time.After(3 * time.Second):
		t.Fatal("the handler is still draining a silent client")
	}
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	resp, text := readResponse(t, conn)
	assertTooLarge(t, resp, text, testBodyLimit)
	assert.True(t, resp.Close)
}

// TestOversizedBodyDrainsAreCapped: while cap(drains) requests drain, the
// next oversized request is answered 413 and its connection closed at
// once, without a drain; when a drain ends, the next one drains again.
func TestOversizedBodyDrainsAreCapped(t *testing.T) {
	e := newEnv(t, belief.Policy{})
	e.h.drains = make(chan struct{}, 1)
	e.h.drainTime = time.Second
	addr := serve(t, e.h)
	// silent sends a head declaring a big body and 10 bytes of it and
	// reads the answer; closed then waits for the server to close the
	// connection and returns how long that took.
	silent := func() (closed func() time.Duration) {
		conn := dial(t, addr)
		_, err := io.WriteString(conn, rawRequest{path: "/v1/sessions"}.head()+"0123456789")
		require.NoError(t, err)
		br := bufio.NewReader(conn)
		resp, text := readResponseFrom(t, br)
		assertTooLarge(t, resp, text, testBodyLimit)
		start := time.Now()
		return func() time.Duration {
			_, err := br.ReadByte()
			assert.Error(t, err, "the server closes the connection")
			return time.Since(start)
		}
	}
	firstClosed := silent() // the 413 is flushed before the drain
	first := make(chan time.Duration, 1)
	go func() { first <- firstClosed() }()
	require.Eventually(t, func() bool { return len(e.h.drains) == 1 }, 5*time.Second, time.Millisecond, "the first request drains")
	assert.Less(t, silent()(), e.h.drainTime/2, "the second is not drained while the first is")
	assert.Greater(t, <-first, e.h.drainTime/2, "the first was drained until its deadline")
	require.Eventually(t, func() bool { return len(e.h.drains) == 0 }, 5*time.Second, time.Millisecond)
	assert.Greater(t, silent()(), e.h.drainTime/2, "once the first drain ended, the next one drains")
}

// TestMaxBytesHandlerInFrontIsAnswered413: the limit of an
// http.MaxBytesHandler in front of the Handler is answered 413 with its
// own limit_bytes.
func TestMaxBytesHandlerInFrontIsAnswered413(t *testing.T) {
	e := newEnv(t, belief.Policy{})
	h := http.MaxBytesHandler(e.h, 100)
	req := httptest.NewRequest("POST", "/v1/sessions", io.MultiReader(strings.NewReader(strings.Repeat(" ", 200))))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assertTooLarge(t, rec.Result(), rec.Body.Bytes(), 100)
}

// TestBodyOverLimitIs413: for any limit and any body, declared by
// Content-Length or not, the answer is 413 with that limit exactly when
// the body is longer than the limit.
func TestBodyOverLimitIs413(t *testing.T) {
	e := newEnv(t, belief.Policy{})
	body := padTo(`{`+ontoJSON+`,"hypotheses":["a"]}`, 4096)
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.Int64Range(0, 4096).Draw(t, "limit")
		n := rapid.IntRange(0, 4096).Draw(t, "n")
		declared := rapid.Bool().Draw(t, "declared")
		h := New(e.h.b, WithMaxBodyBytes(limit))
		var rd io.Reader = strings.NewReader(body[:n])
		if !declared {
			rd = io.MultiReader(rd)
		}
		req := httptest.NewRequest("POST", "/v1/sessions", rd)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if int64(n) > limit {
			assertTooLarge(t, rec.Result(), rec.Body.Bytes(), limit)
		} else if rec.Code == http.StatusRequestEntityTooLarge {
			t.Fatalf("%d bytes within the limit %d answered 413", n, limit)
		}
	})
}
