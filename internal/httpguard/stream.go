package httpguard

import (
	"io"
	"net/http"
	"time"
)

// Stream wraps h, whose responses may stay open, with per-request
// deadlines in place of the server's whole-request ones: the body is read
// under l.ReadTimeout from the start of the handler, after which the read
// deadline is lifted (so that a long response does not have its context
// cancelled by it); every write and flush must end within l.WriteTimeout
// of its start. The package documentation says why.
func Stream(h http.Handler, l Limits) http.Handler {
	l = l.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.Body == nil || r.Body == http.NoBody {
			_ = rc.SetReadDeadline(time.Time{})
		} else {
			_ = rc.SetReadDeadline(time.Now().Add(l.ReadTimeout))
			r.Body = &streamBody{ReadCloser: r.Body, rc: rc}
		}
		sw := &streamWriter{ResponseWriter: w, rc: rc, timeout: l.WriteTimeout}
		defer sw.extend() // what net/http writes after the handler returns
		h.ServeHTTP(sw, r)
	})
}

// streamBody lifts the read deadline once the body has been read to its
// end (on any other error the deadline stays, bounding what net/http
// may still read of it).
type streamBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// streamWriter sets the write deadline before each write and flush.
type streamWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *streamWriter) extend() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout)) }

func (w *streamWriter) Write(p []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(p)
}

// FlushError is what http.ResponseController.Flush calls.
func (w *streamWriter) FlushError() error {
	w.extend()
	return w.rc.Flush()
}

// Flush is http.Flusher's.
func (w *streamWriter) Flush() { _ = w.FlushError() }

// Unwrap gives http.ResponseController the underlying writer.
func (w *streamWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
