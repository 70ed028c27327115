package toolgate

import (
	"context"
	"log/slog"
)

// LogObserver returns an Observer that writes one line to logger for each
// decision (message "toolgate decision") and each outcome ("toolgate
// result"), at level Info (Warn for an error, for a refusal the
// kernel made or a caller's budget now spent).
//
// A decision's attributes: tool, call_id, caller, principal (its key,
// when set), verdict, rule and condition (when a rule decided), seq (the
// trace entry), cost and remaining (decimal strings, as kernel.Cost
// writes them; remaining when the caller has a session), exec_id,
// approval (the request asked, or the approval used), explanation (a
// refusal's or the question), duration, err. An outcome's: tool, call_id,
// caller, principal, exec_id, ok (the tool succeeded), charged, unpaid
// (when not zero), remaining, seq, tool_duration (from the allow to
// After), duration, err.
//
// The lines carry neither arguments nor output: those are on the log,
// bound by their digests.
func LogObserver(logger *slog.Logger) Observer { return logObserver{logger} }

type logObserver struct{ l *slog.Logger }

func (o logObserver) ObserveDecision(ctx context.Context, e DecisionEvent) {
	d := e.Decision
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs, slog.String("tool", e.Call.Tool), slog.String("call_id", e.Call.ID), slog.String("caller", e.Call.Caller))
	if key := e.Call.Principal.Key(); key != "" {
		attrs = append(attrs, slog.String("principal", key))
	}
	level := slog.LevelInfo
	if e.Err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("verdict", "error"))
	} else {
		attrs = append(attrs, slog.String("verdict", d.Verdict.String()))
		if d.Rule.Found {
			attrs = append(attrs, slog.String("rule", d.Rule.String()))
		}
		if d.Condition != "" {
			attrs = append(attrs, slog.String("condition", d.Condition))
		}
		attrs = append(attrs, slog.Uint64("seq", d.Seq))
		if d.Verdict == Allow {
			attrs = append(attrs, slog.String("cost", d.Cost.String()), slog.String("exec_id", d.ExecID))
		}
	}
	if e.Metered {
		attrs = append(attrs, slog.String("remaining", e.Budget.Remaining().String()))
		if e.Budget.Remaining() <= 0 {
			level = slog.LevelWarn
		}
	}
	switch {
	case d.ApprovalID != "":
		attrs = append(attrs, slog.String("approval", d.ApprovalID))
	case d.Approval != nil:
		attrs = append(attrs, slog.String("approval", d.Approval.ID))
	}
	if d.Explanation != "" {
		attrs = append(attrs, slog.String("explanation", d.Explanation))
	}
	if d.Condition == "kernel" {
		level = slog.LevelWarn
	}
	attrs = append(attrs, slog.Duration("duration", e.Duration))
	if e.Err != nil {
		attrs = append(attrs, slog.String("err", e.Err.Error()))
	}
	o.l.LogAttrs(ctx, level, "toolgate decision", attrs...)
}

func (o logObserver) ObserveOutcome(ctx context.Context, e OutcomeEvent) {
	attrs := make([]slog.Attr, 0, 14)
	attrs = append(attrs, slog.String("tool", e.Call.Tool), slog.String("call_id", e.Call.ID), slog.String("caller", e.Call.Caller))
	if key := e.Call.Principal.Key(); key != "" {
		attrs = append(attrs, slog.String("principal", key))
	}
	level := slog.LevelInfo
	attrs = append(attrs, slog.String("exec_id", e.Outcome.ExecID), slog.Bool("ok", !e.Failed),
		slog.String("charged", e.Outcome.Charged.String()))
	if e.Outcome.Unpaid != 0 {
		attrs = append(attrs, slog.String("unpaid", e.Outcome.Unpaid.String()))
		level = slog.LevelWarn
	}
	if e.Metered {
		attrs = append(attrs, slog.String("remaining", e.Budget.Remaining().String()))
	}
	attrs = append(attrs, slog.Uint64("seq", e.Outcome.Seq))
	if !e.Allowed.IsZero() {
		attrs = append(attrs, slog.Duration("tool_duration", e.Reported.Sub(e.Allowed)))
	}
	attrs = append(attrs, slog.Duration("duration", e.Duration))
	if e.Err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("err", e.Err.Error()))
	}
	o.l.LogAttrs(ctx, level, "toolgate result", attrs...)
}
