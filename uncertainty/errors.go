package uncertainty

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error the package returns wraps one of them (test
// with errors.Is); the typed errors below carry the details.
var (
	// ErrInvalidInput: an argument is NaN or infinite, a probability lies
	// outside [0, 1], two slices that must pair up have different lengths,
	// a slice is empty where data is needed, or an option is out of range.
	ErrInvalidInput = errors.New("uncertainty: invalid input")

	// ErrCalibrationTooSmall: the calibration set cannot support the
	// requested miscoverage α, because ⌈(n+1)(1−α)⌉ > n. Conformal
	// prediction refuses rather than returning a set with no guarantee.
	ErrCalibrationTooSmall = errors.New("uncertainty: calibration set too small for alpha")

	// ErrSampler: the Sampler failed or returned answers that do not match
	// the request.
	ErrSampler = errors.New("uncertainty: sampler failed")

	// ErrJudge: the Equivalence judge failed.
	ErrJudge = errors.New("uncertainty: equivalence judge failed")
)

// InputError names the argument that was rejected and why. It wraps
// ErrInvalidInput.
type InputError struct {
	Arg    string // argument or field name, e.g. "probs" or "alpha"
	Index  int    // position within Arg when it is a slice, -1 otherwise
	Reason string // what is wrong with it
}

func (e *InputError) Error() string {
	if e.Index >= 0 {
		return fmt.Sprintf("%v: %s[%d]: %s", ErrInvalidInput, e.Arg, e.Index, e.Reason)
	}
	return fmt.Sprintf("%v: %s: %s", ErrInvalidInput, e.Arg, e.Reason)
}

func (e *InputError) Unwrap() error { return ErrInvalidInput }

func invalid(arg string, index int, format string, args ...any) error {
	return &InputError{Arg: arg, Index: index, Reason: fmt.Sprintf(format, args...)}
}

// TooSmallError reports a calibration set (or, with class-conditional
// calibration, one class's share of it) that is too small for α: the
// conformal quantile needs the ⌈(n+1)(1−α)⌉-th smallest of n scores, which
// exists only when n ≥ Need. It wraps ErrCalibrationTooSmall.
type TooSmallError struct {
	Class int     // the class whose calibration scores are too few; -1 for the marginal set
	N     int     // number of calibration scores available
	Need  int     // smallest n for which the quantile exists at this α
	Alpha float64 // requested miscoverage
}

func (e *TooSmallError) Error() string {
	return fmt.Sprintf("%v: %s", ErrCalibrationTooSmall, e.detail())
}

func (e *TooSmallError) detail() string {
	if e.Class >= 0 {
		return fmt.Sprintf("class %d has %d calibration scores, alpha %g needs at least %d", e.Class, e.N, e.Alpha, e.Need)
	}
	return fmt.Sprintf("%d calibration scores, alpha %g needs at least %d", e.N, e.Alpha, e.Need)
}

func (e *TooSmallError) Unwrap() error { return ErrCalibrationTooSmall }

// tooSmallErrors reports every class too short for α at once, with the
// package's prefix once; errors.As finds each *TooSmallError.
type tooSmallErrors []*TooSmallError

func (es tooSmallErrors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.detail()
	}
	return fmt.Sprintf("%v: %s", ErrCalibrationTooSmall, strings.Join(parts, "; "))
}

func (es tooSmallErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
