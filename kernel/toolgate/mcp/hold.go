package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/kernel/toolgate"
)

// holds reports whether the call of d (an AskApproval) is held for an
// answer given elsewhere (Options.Hold): its session's human cannot
// answer it here — the client cannot elicit, or the request awaits
// others.
func (gd *Guard) holds(req *sdk.CallToolRequest, d toolgate.Decision) bool {
	if !gd.hold || gd.holdFor <= 0 {
		return false
	}
	return !gd.answers(d.Call, d.Approval) || !canElicit(req.ClientCapabilities())
}

// StopHolding ends every held call's wait, and every later one at once:
// they are refused as unanswered, their requests still waiting. A server
// that shuts down calls it first, since closing a session waits for the
// calls it serves.
func (gd *Guard) StopHolding() { gd.stopOnce.Do(func() { close(gd.stopping) }) }

// held waits for the request of d to be decided elsewhere, for at most
// the gate's approval timeout, then decides the call again: it runs once
// approved, is refused once denied. Unanswered — or when the client
// stops waiting — the call is refused and the refusal recorded; the
// request stays waiting, so that the same call made again after an
// approval runs.
func (gd *Guard) held(ctx context.Context, req *sdk.CallToolRequest, d toolgate.Decision, run runFunc, log *slog.Logger) (sdk.Result, error) {
	ap := d.Approval
	timeout := gd.holdFor
	log.Info("holding for an approval", "call", d.Call.ID, "approval", ap.ID, "awaiting", ap.Awaiting, "timeout", timeout, "inbox", gd.inbox)
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	go func() {
		select {
		case <-gd.stopping:
			cancel()
		case <-wctx.Done():
		}
	}()
	answered := gd.gate.Await(wctx, ap.ID)
	cancel()
	if !answered {
		r, err := gd.gate.Unanswered(context.WithoutCancel(ctx), d, time.Since(start))
		if err != nil {
			log.Error("recording the refusal", "call", d.Call.ID, "err", err)
			return refusal(fmt.Sprintf("tool %q refused: no approval within %s", ap.Tool, timeout)), nil
		}
		log.Info("unanswered", "call", d.Call.ID, "approval", ap.ID, "seq", r.Seq, "client_gone", ctx.Err() != nil)
		return refusal(r.Explanation + gd.inboxHint()), nil
	}
	d, err := gd.gate.Before(ctx, d.Call)
	if err != nil {
		log.Error("no decision", "err", err)
		return refusal(fmt.Sprintf("tool %q refused: the gate could not decide: %v", ap.Tool, err)), nil
	}
	if d.Verdict == toolgate.AskApproval {
		// Expired, and asked again: not held twice.
		return refusal(fmt.Sprintf("tool %q: %s (awaiting %s)", d.Call.Tool, d.Explanation, strings.Join(d.Approval.Awaiting, ", "))), nil
	}
	return gd.decided(ctx, req, d, run, log)
}

// inboxHint is what a refusal adds to name Options.Inbox: "" without one.
func (gd *Guard) inboxHint() string {
	if gd.inbox == "" {
		return ""
	}
	return "; a human can answer the request at the approval inbox " + gd.inbox
}
