package cedar

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// A Mismatch is a recorded Cedar evaluation that a replay answers
// otherwise: the entry, the rule, and both answers ("applies
// [eng-acme]").
type Mismatch struct {
	Seq                uint64
	Rule               string
	Recorded, Replayed string
}

func (m Mismatch) String() string {
	return fmt.Sprintf("entry %d, rule %s: recorded %s, replayed %s", m.Seq, m.Rule, m.Recorded, m.Replayed)
}

// Replay evaluates again every Cedar condition a gate recorded on log (a
// kernel execution's, reservation's or rejection's "when:" tag, a
// refusal's "when" member) from the recorded input, with the rules of
// policy (lang for its server), and returns the evaluations it answers
// otherwise, with how many it evaluated. A recorded text whose SHA-256
// is not that of the policy's rule is a mismatch too (the policy is not
// the one the gate enforced). An entry it cannot read is an error.
func Replay(ctx context.Context, log *trace.Log, policy toolgate.Policy, lang Language) ([]Mismatch, int, error) {
	conds := map[int]toolgate.CompiledCondition{}
	var out []Mismatch
	n := 0
	for e, err := range log.Entries(ctx, 0) {
		if err != nil {
			return nil, n, fmt.Errorf("cedar: reading the log: %w", err)
		}
		w, err := recorded(e)
		if err != nil {
			return nil, n, fmt.Errorf("cedar: entry %d (%s): %w", e.Seq, e.Kind, err)
		}
		if w == nil {
			continue
		}
		var in toolgate.ConditionInput
		if err := in.UnmarshalJSON(w.Input); err != nil {
			return nil, n, fmt.Errorf("cedar: entry %d (%s): %w", e.Seq, e.Kind, err)
		}
		for _, ev := range w.Evaluations {
			if ev.Language != LanguageName {
				continue
			}
			n++
			m := Mismatch{Seq: e.Seq, Rule: ev.Rule, Recorded: answer(ev.Answer, ev.Policies)}
			i, err := strconv.Atoi(strings.TrimPrefix(ev.Rule, "#"))
			if err != nil || !strings.HasPrefix(ev.Rule, "#") || i < 0 || i >= len(policy.Tools) || policy.Tools[i].When == nil || policy.Tools[i].When.Language != LanguageName {
				m.Replayed = "no Cedar condition on this rule in the policy"
				out = append(out, m)
				continue
			}
			text := policy.Tools[i].When.Source()
			if sum := sha256.Sum256([]byte(text)); hex.EncodeToString(sum[:]) != ev.TextSHA256 {
				m.Replayed = "a different text (sha256 " + hex.EncodeToString(sum[:]) + ", recorded " + ev.TextSHA256 + ")"
				out = append(out, m)
				continue
			}
			c, ok := conds[i]
			if !ok {
				if c, err = lang.Compile("/tools/"+strconv.Itoa(i)+"/when", text); err != nil {
					return nil, n, err
				}
				conds[i] = c
			}
			if got := replayOne(c, &in); got != m.Recorded {
				m.Replayed = got
				out = append(out, m)
			}
		}
	}
	return out, n, nil
}

// replayOne evaluates c as the gate would and words the answer.
func replayOne(c toolgate.CompiledCondition, in *toolgate.ConditionInput) string {
	a, err := c.Evaluate(in)
	switch {
	case err != nil:
		return answer("error", nil)
	case a.Refuses:
		return answer("refuses", a.Policies)
	case a.Applies:
		return answer("applies", a.Policies)
	}
	return answer("misses", a.Policies)
}

func answer(a string, policies []string) string {
	policies = slices.Clone(policies)
	slices.Sort(policies)
	return a + " [" + strings.Join(policies, " ") + "]"
}

// recorded returns the conditions' record an entry carries, nil for
// none.
func recorded(e trace.Entry) (*gatelog.When, error) {
	switch e.Kind {
	case gatelog.KindRefuse:
		d, err := gatelog.Decode(e)
		if err != nil {
			return nil, err
		}
		return d.(gatelog.Refuse).When, nil
	case kernel.KindExecute, kernel.KindReserve, kernel.KindReject:
		if !strings.Contains(string(e.Payload), `"when:`) {
			return nil, nil
		}
		d, err := kernel.DecodeEntry(e)
		if err != nil {
			return nil, err
		}
		var tags []string
		switch x := d.(type) {
		case kernel.ExecuteEntry:
			tags = x.Action.Tags
		case kernel.ReserveEntry:
			tags = x.Action.Tags
		case kernel.RejectEntry:
			tags = x.Action.Tags
		}
		for _, t := range tags {
			if rest, ok := strings.CutPrefix(t, "when:"); ok {
				var w gatelog.When
				if err := json.Unmarshal([]byte(rest), &w); err != nil {
					return nil, fmt.Errorf("the when: tag is not a record: %v", err)
				}
				return &w, nil
			}
		}
	}
	return nil, nil
}
