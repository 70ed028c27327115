package belief

import (
	"errors"
	"fmt"
	"sort"
)

// Code is the protocol error code of the specification's error model (§3.2).
type Code string

// The error codes a caller may receive. CodeEventNotFound is used by
// AUDIT_TRACE for an unknown since_event_id.
const (
	CodeInvalidRequest      Code = "INVALID_REQUEST"
	CodeInvalidHypothesisID Code = "INVALID_HYPOTHESIS_ID"
	CodeSessionNotFound     Code = "SESSION_NOT_FOUND"
	CodeSessionTerminated   Code = "SESSION_TERMINATED"
	CodeObligationNotFound  Code = "OBLIGATION_NOT_FOUND"
	CodeEventNotFound       Code = "EVENT_NOT_FOUND"
	CodeConflict            Code = "CONFLICT"
	CodeInternal            Code = "INTERNAL"
)

// Sentinel errors, one per code. Every error a transition returns wraps
// exactly one of them; test with errors.Is.
var (
	ErrInvalidRequest      = errors.New("belief: invalid request")
	ErrInvalidHypothesisID = errors.New("belief: invalid hypothesis id")
	ErrSessionNotFound     = errors.New("belief: session not found")
	ErrSessionTerminated   = errors.New("belief: session terminated")
	ErrObligationNotFound  = errors.New("belief: obligation not found")
	ErrEventNotFound       = errors.New("belief: event not found")
	ErrConflict            = errors.New("belief: conflict")
	// ErrReplay is wrapped by every *ReplayError.
	ErrReplay = errors.New("belief: replay failed")
)

var codeOf = []struct {
	err  error
	code Code
}{
	{ErrInvalidRequest, CodeInvalidRequest},
	{ErrInvalidHypothesisID, CodeInvalidHypothesisID},
	{ErrSessionNotFound, CodeSessionNotFound},
	{ErrSessionTerminated, CodeSessionTerminated},
	{ErrObligationNotFound, CodeObligationNotFound},
	{ErrEventNotFound, CodeEventNotFound},
	{ErrConflict, CodeConflict},
}

// CodeOf returns the protocol code of err: the code of the sentinel it
// wraps, or CodeInternal for anything else (a storage failure, say).
func CodeOf(err error) Code {
	for _, c := range codeOf {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return CodeInternal
}

// Error is a rejected request: the sentinel naming the condition, a human
// message and machine-readable details (for INVALID_HYPOTHESIS_ID, the
// offending ids under "unknown_ids"). A rejected transition leaves the
// session value untouched and records nothing.
type Error struct {
	Err     error // one of the sentinel errors above
	Message string
	Details map[string]any
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Code returns the protocol code of the error.
func (e *Error) Code() Code { return CodeOf(e.Err) }

func reject(sentinel error, format string, args ...any) *Error {
	return &Error{Err: sentinel, Message: fmt.Sprintf(format, args...)}
}

// Violation is one problem found in a request: the field path and what is
// wrong with it.
type Violation struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// invalid builds an INVALID_REQUEST error carrying all violations, sorted
// by path then message, or nil when there are none.
func invalid(vs []Violation) error {
	if len(vs) == 0 {
		return nil
	}
	sort.Slice(vs, func(i, j int) bool {
		if vs[i].Path != vs[j].Path {
			return vs[i].Path < vs[j].Path
		}
		return vs[i].Message < vs[j].Message
	})
	msg := vs[0].Path + ": " + vs[0].Message
	if len(vs) > 1 {
		msg = fmt.Sprintf("%s (and %d more)", msg, len(vs)-1)
	}
	list := make([]any, len(vs))
	for i, v := range vs {
		list[i] = map[string]any{"path": v.Path, "message": v.Message}
	}
	return &Error{Err: ErrInvalidRequest, Message: msg, Details: map[string]any{"violations": list}}
}

// ReplayError reports the event at which a replay stopped: its position in
// the log, its event id (empty if it could not be read) and why.
type ReplayError struct {
	Index   int
	EventID string
	Reason  string
}

func (e *ReplayError) Error() string {
	return fmt.Sprintf("%v at event %d (id %q): %s", ErrReplay, e.Index, e.EventID, e.Reason)
}

func (e *ReplayError) Unwrap() error { return ErrReplay }
