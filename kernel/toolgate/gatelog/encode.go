package gatelog

import (
	"strconv"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel"
)

// The gate writes its entries' canonical JSON (RFC 8785) directly, members
// in sorted order, instead of through encoding/json and a transform: the
// result entry is on every call's path. TestEntriesAreCanonical checks
// that both ways give the same bytes.

// object appends one JSON object's members; the caller names them in
// sorted order.
type object struct {
	b     []byte
	first bool
}

func newObject(dst []byte) *object { return &object{b: append(dst, '{'), first: true} }

func (o *object) key(k string) {
	if !o.first {
		o.b = append(o.b, ',')
	}
	o.first = false
	o.b = canon.AppendString(o.b, k)
	o.b = append(o.b, ':')
}

// str writes v, each byte of it that is not UTF-8 as U+FFFD, as
// encoding/json does.
func (o *object) str(k, v string) {
	o.key(k)
	if utf8.ValidString(v) {
		o.b = canon.AppendString(o.b, v)
		return
	}
	valid := make([]byte, 0, len(v)+8)
	for i := 0; i < len(v); {
		r, n := utf8.DecodeRuneInString(v[i:])
		if r == utf8.RuneError && n == 1 {
			valid = utf8.AppendRune(valid, utf8.RuneError)
		} else {
			valid = append(valid, v[i:i+n]...)
		}
		i += n
	}
	o.b = canon.AppendString(o.b, valid)
}

func (o *object) strOmit(k, v string) {
	if v != "" {
		o.str(k, v)
	}
}

// size writes a byte count: lengths stay far below 2^53.
func (o *object) size(k string, n int) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, int64(n), 10)
}

func (o *object) boolean(k string, v bool) {
	o.key(k)
	o.b = strconv.AppendBool(o.b, v)
}

func (o *object) boolOmit(k string, v bool) {
	if v {
		o.boolean(k, v)
	}
}

func (o *object) cost(k string, c kernel.Cost) {
	o.key(k)
	o.b = append(o.b, '"')
	o.b = append(o.b, c.String()...)
	o.b = append(o.b, '"')
}

func (o *object) costOmit(k string, c kernel.Cost) {
	if c != 0 {
		o.cost(k, c)
	}
}

func (o *object) end() []byte { return append(o.b, '}') }

// AppendJSON appends e's canonical JSON.
func (e Refuse) AppendJSON(dst []byte) []byte {
	o := newObject(dst)
	o.strOmit("approval", e.Approval)
	o.str("arguments_sha256", e.ArgumentsSHA256)
	o.size("arguments_size", e.ArgumentsSize)
	o.str("call_id", e.CallID)
	o.str("caller", e.Caller)
	o.strOmit("condition", e.Condition)
	o.strOmit("definition", e.Definition)
	o.str("explanation", e.Explanation)
	o.str("reason", e.Reason)
	o.strOmit("rule", e.Rule)
	o.strOmit("rule_name", e.RuleName)
	o.str("session", e.Session)
	o.str("tool", e.Tool)
	o.strOmit("trace", e.Trace)
	if e.When != nil {
		o.key("when")
		o.b = e.When.AppendJSON(o.b)
	}
	return o.end()
}

// AppendJSON appends w's canonical JSON, the text of a "when:" tag. Input
// is written as it is: it must be canonical JSON already (the gate's is;
// an Input that is not is written as null, so that the whole stays
// JSON).
func (w *When) AppendJSON(dst []byte) []byte {
	o := newObject(dst)
	o.key("evaluations")
	o.b = append(o.b, '[')
	for i := range w.Evaluations {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		ev := &w.Evaluations[i]
		e := newObject(o.b)
		e.str("answer", ev.Answer)
		e.strOmit("error", ev.Error)
		e.str("language", ev.Language)
		if len(ev.Policies) > 0 {
			e.key("policies")
			e.b = append(e.b, '[')
			for k, p := range ev.Policies {
				if k > 0 {
					e.b = append(e.b, ',')
				}
				e.b = canon.AppendString(e.b, p)
			}
			e.b = append(e.b, ']')
		}
		e.str("rule", ev.Rule)
		e.str("text_sha256", ev.TextSHA256)
		o.b = e.end()
	}
	o.b = append(o.b, ']')
	o.key("input")
	if len(w.Input) > 0 && canon.Valid(w.Input) == nil {
		o.b = append(o.b, w.Input...)
	} else {
		o.b = append(o.b, "null"...)
	}
	return o.end()
}

// AppendJSON appends e's canonical JSON.
func (e Result) AppendJSON(dst []byte) []byte {
	o := newObject(dst)
	o.costOmit("actual", e.Actual)
	o.str("call_id", e.CallID)
	o.str("caller", e.Caller)
	o.cost("charged", e.Charged)
	o.strOmit("definition", e.Definition)
	o.strOmit("error", e.Error)
	o.str("exec_id", e.ExecID)
	o.strOmit("finding", e.Finding)
	o.boolOmit("measured", e.Measured)
	o.boolean("ok", e.OK)
	o.strOmit("output_base64", e.OutputBase64)
	o.str("output_sha256", e.OutputSHA256)
	o.size("output_size", e.OutputSize)
	o.strOmit("output_text", e.OutputText)
	o.str("session", e.Session)
	o.boolOmit("speculative", e.Speculative)
	o.str("tool", e.Tool)
	o.strOmit("trace", e.Trace)
	o.boolOmit("truncated", e.Truncated)
	o.costOmit("unpaid", e.Unpaid)
	return o.end()
}
