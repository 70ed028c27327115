package belief

import (
	"errors"
	"fmt"
	"strings"

	"github.com/verity-go/verity/internal/violation"
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

// Error is a rejected request other than an invalid one: the sentinel
// naming the condition, a human message and machine-readable details (for
// INVALID_HYPOTHESIS_ID, the offending ids under "unknown_ids"). An
// invalid request is a *ValidationError instead. A rejected transition
// leaves the session value untouched and records nothing.
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

func reject(sentinel error, format string, args ...any) *Error {
	return &Error{Err: sentinel, Message: fmt.Sprintf(format, args...)}
}

// Rules name what a Violation breaks. They are stable strings that callers
// may branch on; belief/server sends them in details.violations.
const (
	RuleSyntax       = violation.RuleSyntax       // not one JSON text that RFC 8785 accepts (duplicate keys, lone surrogates, unsafe integers, too deep), or an unreadable query string
	RuleType         = violation.RuleType         // the wrong JSON type (a number for a string, an array for an object, a string for force)
	RuleRequired     = violation.RuleRequired     // a required member missing, null or empty
	RuleRange        = "range"                    // a number or time outside its range (min_total_eliminations, an event's year)
	RuleUTF8         = "utf8"                     // a string that is not valid UTF-8
	RuleUnknownField = violation.RuleUnknownField // a member or query parameter the protocol does not define
	RulePathMismatch = "path_mismatch"            // a body session_id or obligation_id that disagrees with the URL path
	RuleDuplicate    = "duplicate"                // a query parameter given more than once
)

// Violation is one problem found in a request: an RFC 6901 JSON Pointer
// into the request ("" for the whole body, "/hypotheses/0"), the rule it
// breaks and a message for people. It is the type every Verity validator
// reports.
type Violation = violation.Violation

// ValidationError is an INVALID_REQUEST: every violation found in one
// request, sorted by path (array indices numerically), then rule, then
// message. It wraps ErrInvalidRequest, so CodeOf maps it to
// CodeInvalidRequest. It is the same type as the ValidationError of every
// other Verity package.
type ValidationError = violation.ValidationError

// invalid returns a *ValidationError wrapping ErrInvalidRequest for the
// violations, or nil when there are none.
func invalid(vs []Violation) error {
	if len(vs) == 0 {
		return nil
	}
	return violation.New("belief", "request", vs, ErrInvalidRequest)
}

// reason is the message of err without the package prefix, for use inside
// another belief error.
func reason(err error) string { return strings.TrimPrefix(err.Error(), "belief: ") }

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
