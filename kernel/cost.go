package kernel

import (
	"fmt"
	"math"
	"strconv"
)

// Cost is an exact amount of budget in thousandths of a unit (the
// specification's ×1000 fixed-point scale): Cost(1500) is 1.5 units.
// Costs never go through floating point inside the kernel.
type Cost int64

// Unit is one whole unit of budget.
const Unit Cost = 1000

// ParseCost parses a decimal amount of units ("1.5", "0.001", "2e-3",
// "12"). It is an error — never a rounding — if the amount is negative,
// not a whole number of thousandths ("0.0005"), not a number ("NaN",
// "Inf") or beyond the int64 range of thousandths.
func ParseCost(s string) (Cost, error) {
	c, err := parseDecimal(s, 3)
	if err != nil {
		return 0, fmt.Errorf("%w: %q: %s", ErrInvalidCost, s, err.Error())
	}
	return Cost(c), nil
}

type decimalError string

func (e decimalError) Error() string { return string(e) }

// parseDecimal parses a JSON-number-shaped decimal and returns it times
// 10^scale as an int64, failing if that is not an integer.
func parseDecimal(s string, scale int) (int64, error) {
	i := 0
	if i < len(s) && s[i] == '-' {
		return 0, decimalError("negative")
	}
	intStart := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intPart := s[intStart:i]
	if intPart == "" {
		return 0, decimalError("not a decimal number")
	}
	if len(intPart) > 1 && intPart[0] == '0' {
		return 0, decimalError("leading zero")
	}
	frac := ""
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		frac = s[fs:i]
		if frac == "" {
			return 0, decimalError("no digits after the decimal point")
		}
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			neg = s[i] == '-'
			i++
		}
		es := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if exp < 1_000_000 {
				exp = exp*10 + int(s[i]-'0')
			}
			i++
		}
		if es == i {
			return 0, decimalError("no digits in the exponent")
		}
		if neg {
			exp = -exp
		}
	}
	if i != len(s) {
		return 0, decimalError("not a decimal number")
	}
	digits := []byte(intPart + frac)
	shift := exp - len(frac) + scale // value = digits × 10^shift
	// Strip leading zeros, then trailing zeros into the shift.
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		return 0, nil
	}
	for digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		shift++
	}
	if shift < 0 {
		return 0, decimalError("not a whole number of thousandths")
	}
	if len(digits)+shift > 19 {
		return 0, decimalError("out of range")
	}
	var v uint64
	for _, d := range digits {
		v = v*10 + uint64(d-'0')
	}
	for range shift {
		v *= 10
	}
	if v > math.MaxInt64 {
		return 0, decimalError("out of range")
	}
	return int64(v), nil
}

// String returns the exact decimal amount of units: "1.5", "0.001", "12".
func (c Cost) String() string { return string(c.appendDecimal(nil)) }

func (c Cost) appendDecimal(dst []byte) []byte {
	u := uint64(c)
	if c < 0 {
		dst = append(dst, '-')
		u = -u
	}
	dst = strconv.AppendUint(dst, u/1000, 10)
	if f := u % 1000; f != 0 {
		dst = append(dst, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
		for dst[len(dst)-1] == '0' {
			dst = dst[:len(dst)-1]
		}
	}
	return dst
}

// MarshalJSON writes the cost as a JSON string holding its exact decimal
// form, so no reader rounds it.
func (c Cost) MarshalJSON() ([]byte, error) {
	b := append([]byte{'"'}, c.appendDecimal(nil)...)
	return append(b, '"'), nil
}

// UnmarshalJSON accepts a JSON number or a string holding a decimal.
func (c *Cost) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := ParseCost(s)
	if err != nil {
		return err
	}
	*c = v
	return nil
}
