package toolgate

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/speculative"
	"github.com/verity-go/verity/trace"
)

// After reports how an allowed call ended and records it: a reserved
// call is settled (at Result.Actual when measured, else at its
// reservation), a fixed-cost call measured below its cost or failed under
// RefundOnError is refunded the difference, the output is checked for
// speculative markers when the rule asks, and a gatelog.KindResult entry records
// the outcome. c names the call by (Caller, ID), as Before's Decision.Call
// returned it; a call not open is ErrUnknownCall. An overrun the budget
// could not pay returns the Outcome with kernel.ErrOverrun. If the
// settlement or refund could not be recorded, nothing changed and the call
// stays open: After may be called again. Once it is recorded the call is
// closed, even when a shared budget then fails to follow (the error says
// so; the shared balance overstates spending, the safe direction).
func (g *Gate) After(ctx context.Context, c Call, r Result) (Outcome, error) {
	if g.obs == nil {
		return g.after(ctx, c, r, nil)
	}
	return g.observeAfter(ctx, c, r)
}

// after is After; ev, when not nil, is filled with what the gate's
// Observer is told besides the Outcome.
func (g *Gate) after(ctx context.Context, c Call, r Result, ev *OutcomeEvent) (Outcome, error) {
	// The settlement or refund and the result share one fsync, taken
	// after the caller's session is unlocked (see before).
	dctx, dur := trace.DeferDurability(ctx)
	out, err := g.afterWritten(dctx, c, r, ev)
	if werr := dur.Wait(); werr != nil {
		return out, fmt.Errorf("toolgate: the result of %q is not durable: %w", c.Tool, werr)
	}
	return out, err
}

// afterWritten is after up to the result written, not yet durable.
func (g *Gate) afterWritten(ctx context.Context, c Call, r Result, ev *OutcomeEvent) (Outcome, error) {
	cl := g.acquire(c.Caller)
	if cl == nil {
		return Outcome{}, fmt.Errorf("%w: %q", ErrUnknownCall, c.ID)
	}
	defer g.release(cl)
	<-cl.ready
	cl.mu.Lock()
	oc, ok := cl.leave(c.ID)
	cl.mu.Unlock()
	if !ok {
		return Outcome{}, fmt.Errorf("%w: %q", ErrUnknownCall, c.ID)
	}
	if ev != nil {
		ev.open(oc)
	}

	if r.Measured && r.Actual < 0 {
		return Outcome{}, g.reopen(cl, c.ID, oc, fmt.Errorf("%w: measured cost %s is negative", ErrInvalidResult, r.Actual))
	}
	out := Outcome{ExecID: oc.execID, Charged: oc.cost}
	var recordedErr error // from a settlement or refund that was recorded all the same
	failed := r.Err != nil
	switch end := ended(oc, r, oc.rule.RefundOnError); {
	case end.settle:
		s, err := cl.sess.Settle(ctx, oc.execID, end.actual)
		if err != nil && s.Seq == 0 {
			// Nothing was recorded: the call stays open for a retry.
			return out, g.reopen(cl, c.ID, oc, fmt.Errorf("toolgate: settling %q: %w", c.Tool, err))
		}
		// Recorded: the settlement stands, whatever else the error says
		// (an overrun, a shared budget that could not follow).
		recordedErr = err
		cl.spentBack(oc.execID, s.Refund, true)
		out.Charged = s.Reserved - s.Refund + s.Overrun
		out.Unpaid = s.Unpaid
	case end.refund > 0:
		rr, err := cl.sess.Refund(ctx, oc.execID, end.refund, end.why)
		if err != nil && rr.Seq == 0 {
			return out, g.reopen(cl, c.ID, oc, fmt.Errorf("toolgate: refunding %q: %w", c.Tool, err))
		}
		// Recorded: the refund stands; a shared budget that could
		// not follow is reported, never refunded twice.
		recordedErr = err
		cl.spentBack(oc.execID, end.refund, false)
		out.Charged = oc.cost - end.refund
	}
	// The call is closed: its execution need not be refundable any more
	// (the session held it since Before).
	_ = cl.sess.Release(oc.execID)
	if oc.rule.CheckResult || g.comp().cfg.CheckResults {
		out.Speculative, out.Finding = checkOutput(r.Output)
	}

	sum := sha256.Sum256(r.Output)
	var digest [2 * sha256.Size]byte
	hex.Encode(digest[:], sum[:])
	e := gatelog.Result{Session: g.SessionID(c.Caller), Caller: c.Caller, CallID: c.ID, ExecID: oc.execID, Tool: oc.tool,
		OK: !failed, OutputSHA256: string(digest[:]), OutputSize: len(r.Output),
		Charged: out.Charged, Unpaid: out.Unpaid, Measured: r.Measured,
		Speculative: out.Speculative, Finding: out.Finding, Definition: oc.definition, Trace: oc.trace}
	if r.Measured {
		e.Actual = r.Actual
	}
	if failed {
		e.Error, _ = cut(r.Err.Error(), g.comp().cfg.ResultTextLimit)
	}
	if utf8.Valid(r.Output) {
		e.OutputText, e.Truncated = cut(string(r.Output), g.comp().cfg.ResultTextLimit)
	} else {
		b := r.Output
		if g.comp().cfg.ResultTextLimit >= 0 && len(b) > g.comp().cfg.ResultTextLimit {
			b, e.Truncated = b[:g.comp().cfg.ResultTextLimit], true
		}
		e.OutputBase64 = base64.StdEncoding.EncodeToString(b)
	}
	buf := payloads.Get().(*[]byte)
	payload := e.AppendJSON((*buf)[:0])
	if len(payload) > trace.MaxPayloadLen {
		// Escapes and base64 made the kept text too large for one entry:
		// keep the digest and size, and the error's first bytes.
		e.OutputText, e.OutputBase64, e.Truncated = "", "", true
		e.Error, _ = cut(e.Error, defaultResultTextLimit)
		payload = e.AppendJSON(payload[:0])
	}
	entry, err := g.log.Append(ctx, gatelog.KindResult, payload, trace.At(g.clock()))
	if cap(payload) <= maxPooledPayload {
		*buf = payload // Append copied it
		payloads.Put(buf)
	}
	if err != nil {
		// The settlement or refund is recorded; only the outcome is
		// missing from the log. Report it: the caller may retry nothing.
		return out, fmt.Errorf("toolgate: recording the result of %q: %w", c.Tool, err)
	}
	out.Seq = entry.Seq
	return out, recordedErr
}

// payloads holds the buffers result entries are encoded in, *[]byte:
// the log copies a payload, so that one buffer serves call after call
// rather than each growing its own from nothing. A buffer larger than
// maxPooledPayload (a large output kept as text) is left to the garbage
// collector. The buffers are the gate's, not a caller's: a caller's
// concurrent results need more than one, and an idle caller holds none.
var payloads = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledPayload is the largest buffer payloads keeps.
const maxPooledPayload = 64 << 10

// reopen puts a call back after a failed settlement or refund, so that
// After can be retried.
func (g *Gate) reopen(cl *caller, id string, oc openCall, err error) error {
	cl.mu.Lock()
	cl.reopen(id, oc)
	cl.mu.Unlock()
	return err
}

// cut returns s cut to at most limit bytes at a character boundary
// (whole when limit is negative) and whether it was cut.
func cut(s string, limit int) (string, bool) {
	if limit < 0 || len(s) <= limit {
		return s, false
	}
	n := limit
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// checkOutput runs the speculative firewall over a tool's output: as JSON
// when it is JSON, else as one string. A check that cannot finish counts
// as speculative (fail closed).
func checkOutput(out []byte) (bool, string) {
	var v any = string(out)
	if json.Valid(out) {
		v = json.RawMessage(out)
	}
	f, found, err := speculative.Detect(v)
	if err != nil {
		return true, "not checked to the end: " + err.Error()
	}
	if !found {
		return false, ""
	}
	return true, f.String()
}
