package toolgate

// traceTag starts the tag of a call's kernel execution that names the
// trace it was made in (Call.Trace): "trace:" and the trace id.
const traceTag = "trace:"

// traceOf is c.Trace when it is a W3C trace id — 32 lower-case hex
// digits, not all zero (W3C Trace Context, "trace-id") — else "": only a
// trace id is recorded, so that the entries it goes into always decode.
func traceOf(c *Call) string {
	id := c.Trace
	if len(id) != 32 {
		return ""
	}
	zero := true
	for i := 0; i < len(id); i++ {
		b := id[i]
		if (b < '0' || b > '9') && (b < 'a' || b > 'f') {
			return ""
		}
		zero = zero && b == '0'
	}
	if zero {
		return ""
	}
	return id
}
