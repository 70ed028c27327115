package kernel

import (
	"cmp"
	"fmt"
	"github.com/verity-go/verity/kernel/value"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// The ready-made invariants below are blocking; set Enforcement on the
// result to monitor instead, and Suggestion to tell the agent what to do.
// Each one explains a violation in a few words (Invariant.Explain).

// AtMost is the invariant "the int variable key is at most n": a counter
// (see Count) that is absent has counted nothing and holds for n ≥ 0; a
// key holding anything but an int violates it.
func AtMost(name, key string, n int64) Invariant {
	return Invariant{
		Name:        name,
		Description: fmt.Sprintf("%s is at most %d", key, n),
		Check:       func(s State) bool { return atMost(s, key, n) },
		Explain: func(s State) string {
			return describe(s, key) + ", at most " + strconv.FormatInt(n, 10)
		},
	}
}

func atMost(s State, key string, n int64) bool {
	v, ok := s.Get(key)
	if !ok {
		return n >= 0
	}
	i, isInt := v.AsInt()
	return isInt && i <= n
}

// describe says what the counter key holds: "deletes would be 4".
func describe(s State, key string) string {
	v, ok := s.Get(key)
	if !ok {
		return key + " would be absent"
	}
	return key + " would be " + v.String()
}

// AtMostEach is the invariant "every int variable whose name starts with
// prefix is at most n": one counter per tool ("calls/" + tool, counted
// with Count), none of them declared in advance. It reads every variable
// of the state, so its cost grows with the state's size.
func AtMostEach(name, prefix string, n int64) Invariant {
	return Invariant{
		Name:        name,
		Description: fmt.Sprintf("each %s… is at most %d", prefix, n),
		Check:       func(s State) bool { return firstOver(s, prefix, n) == "" },
		Explain: func(s State) string {
			return describe(s, firstOver(s, prefix, n)) + ", at most " + strconv.FormatInt(n, 10)
		},
	}
}

// firstOver returns the smallest name with the prefix whose variable is
// over n or not an int, or "".
func firstOver(s State, prefix string, n int64) string {
	over := ""
	for k := range s.All() {
		if strings.HasPrefix(k, prefix) && !atMost(s, k, n) && (over == "" || k < over) {
			over = k
		}
	}
	return over
}

// Within is the invariant "the numeric variable key lies in [lo, hi]": an
// int, compared exactly with the bounds' values (never rounded to a
// float64), or a float, compared as a float64. Absent, or not a number,
// violates it (fail closed), and so does everything when a bound is NaN.
func Within(name, key string, lo, hi float64) Invariant {
	bounds := "[" + strconv.FormatFloat(lo, 'g', -1, 64) + ", " + strconv.FormatFloat(hi, 'g', -1, 64) + "]"
	return Invariant{
		Name:        name,
		Description: key + " lies in " + bounds,
		Check: func(s State) bool {
			if i, ok := s.Int(key); ok {
				return !math.IsNaN(lo) && !math.IsNaN(hi) && cmpIntFloat(i, lo) >= 0 && cmpIntFloat(i, hi) <= 0
			}
			f, ok := s.Float(key)
			return ok && lo <= f && f <= hi
		},
		Explain: func(s State) string { return describe(s, key) + ", outside " + bounds },
	}
}

// cmpIntFloat compares i with f (not NaN) exactly: -1, 0 or +1 as i is
// less than, equal to or greater than f.
func cmpIntFloat(i int64, f float64) int {
	switch {
	case f >= 1<<63: // also +Inf
		return -1
	case f < -1<<63: // also -Inf
		return 1
	}
	t := math.Trunc(f) // in [-2^63, 2^63): int64(t) is exact
	if c := cmp.Compare(i, int64(t)); c != 0 {
		return c
	}
	return cmp.Compare(t, f) // i == t: f's fraction decides
}

// OneOf is the invariant "the variable key holds one of allowed" (Value
// equality: the int 1 is not the float 1.0). Absent violates it.
func OneOf(name, key string, allowed ...value.Value) Invariant {
	allowed = append([]value.Value(nil), allowed...)
	names := make([]string, len(allowed))
	for i, v := range allowed {
		names[i] = v.String()
	}
	set := "{" + strings.Join(names, ", ") + "}"
	return Invariant{
		Name:        name,
		Description: key + " is one of " + set,
		Check: func(s State) bool {
			v, ok := s.Get(key)
			for _, a := range allowed {
				if ok && v.Equal(a) {
					return true
				}
			}
			return false
		},
		Explain: func(s State) string { return describe(s, key) + ", not one of " + set },
	}
}

// Matches is the invariant "the string variable key matches pattern" (a
// regular expression, matched anywhere unless anchored with ^…$).
// Absent, or not a string, violates it.
func Matches(name, key string, pattern *regexp.Regexp) Invariant {
	if pattern == nil {
		return Invariant{Name: name} // no predicate: New refuses it
	}
	return Invariant{
		Name:        name,
		Description: key + " matches " + pattern.String(),
		Check: func(s State) bool {
			t, ok := s.Text(key)
			return ok && pattern.MatchString(t)
		},
		Explain: func(s State) string { return describe(s, key) + ", not matching " + pattern.String() },
	}
}
