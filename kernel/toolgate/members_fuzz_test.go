package toolgate_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// foldedNaively reports whether some object of the JSON text b has two
// member names equal under strings.EqualFold (equal ones too), reading
// the names in order from encoding/json's token stream: the reference
// the gate's check is held to.
func foldedNaively(b []byte) bool {
	type frame struct {
		object, wantKey bool
		names           []string
	}
	var stack []*frame
	value := func() { // a value ended: its object now wants a key
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	d := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if n := len(stack); n > 0 && stack[n-1].object {
					stack[n-1].wantKey = false
				}
				stack = append(stack, &frame{object: t == '{', wantKey: true})
			default:
				stack = stack[:len(stack)-1]
				value()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				top := stack[n-1]
				for _, prev := range top.names {
					if strings.EqualFold(prev, t) {
						return true
					}
				}
				top.names = append(top.names, t)
				top.wantKey = false
				continue
			}
			value()
		default:
			value()
		}
	}
}

// FuzzArgumentMembers: whatever the arguments, the decision core refuses
// the call at a rule that looks at them (a path condition, an argument
// schema) exactly when they are not strict JSON or some object in them,
// at any depth, has two member names equal under Unicode case folding —
// naming both — and a rule that looks only at the tool's name allows it.
// For an array of paths, a call is allowed exactly when each of its
// paths alone would be (an allow-list admits every path, a deny-list
// refuses any), and never on an empty array.
func FuzzArgumentMembers(f *testing.F) {
	comp, err := toolgate.Policy{Budget: 1000, MinCost: 1, Tools: append(caseFoldRules[:3:3],
		toolgate.Rule{Match: "read_multiple_files", Name: "no-secret", Effect: toolgate.EffectRefuse,
			Paths: []toolgate.PathCondition{{Argument: "/paths", Under: []string{"/srv/data/secret"}}}},
		toolgate.Rule{Match: "read_multiple_files", Name: "data", Cost: 1,
			Paths: []toolgate.PathCondition{{Argument: "/paths", Under: []string{"/srv/data"}}}},
		toolgate.Rule{Match: "read_one", Name: "no-secret-1", Effect: toolgate.EffectRefuse,
			Paths: []toolgate.PathCondition{{Argument: "/path", Under: []string{"/srv/data/secret"}}}},
		toolgate.Rule{Match: "read_one", Name: "data-1", Cost: 1,
			Paths: []toolgate.PathCondition{{Argument: "/path", Under: []string{"/srv/data"}}}},
	)}.Compile()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"path": "/srv/data/a", "Path": "/etc/passwd"}`,
		`{"path": "/srv/data/a", "path": "/etc/passwd"}`,
		`{"path": "/srv/data/a", "o": {"x": [1, {"k": 1, "\u212a": 2}]}}`,
		`{"\u017f": 1, "S": 2, "path": "/srv/data/a"}`,
		`{"\u0130": 1, "i": 2, "\u0131": 3, "path": "/srv/data/a"}`,
		`{"PATH": 1}`,
		`[{"a": 1, "A": 2}]`,
		`{"paths": ["/srv/data/a", "/srv/data/b"]}`,
		`{"paths": ["/srv/data/a", "/etc/passwd"]}`,
		`{"paths": ["/srv/data/a", "/srv/data/secret/k"]}`,
		`{"paths": ["/srv/data/a", "/srv/data/%2e%2e/x"]}`,
		`{"paths": ["/srv/data/a", 7]}`,
		`{"paths": []}`,
		`{"paths": [["/srv/data/a"]]}`,
		`{"paths": ["/srv/data/a"], "Paths": ["/etc"]}`,
		`{"path": "/srv/data/\u2028x"}`,
		"\xff",
		``,
	} {
		f.Add([]byte(s))
	}
	at := time.Unix(0, 0)
	decide := func(tool string, args []byte) toolgate.Ruling {
		return comp.Decide(toolgate.Snapshot{}, toolgate.Call{Tool: tool, Arguments: args}, at)
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		v, strictErr := canon.Decode(args)
		if len(args) == 0 {
			v, strictErr = map[string]any{}, nil
		}
		folded := strictErr == nil && foldedNaively(args)
		unreadable := strictErr != nil || folded
		for _, tool := range []string{"read_file", "search", "read_multiple_files", "read_one"} {
			r := decide(tool, args)
			if got := r.Condition == gatelog.ConditionArguments; got != unreadable {
				t.Fatalf("%s %q: refused as unreadable %v, want %v (strict: %v, folded: %v): %s", tool, args, got, unreadable, strictErr, folded, r.Explanation)
			}
			if folded && !strings.Contains(r.Explanation, "differ only in case") {
				t.Fatalf("%s %q: %s does not name the members", tool, args, r.Explanation)
			}
			if strings.ContainsAny(r.Explanation, "\n\r") {
				t.Fatalf("explanation on more than one line: %q", r.Explanation)
			}
		}
		if r := decide("echo", args); r.Verdict != toolgate.Allow {
			t.Fatalf("echo %q: a rule that does not look at the arguments: %s", args, r.Explanation)
		}
		if unreadable {
			return
		}
		obj, _ := v.(map[string]any)
		paths, ok := obj["paths"].([]any)
		if !ok {
			return
		}
		r := decide("read_multiple_files", args)
		want := len(paths) > 0
		for _, p := range paths {
			s, ok := p.(string)
			if !ok {
				want = false
				break
			}
			one, _ := json.Marshal(map[string]string{"path": s})
			if decide("read_one", one).Verdict != toolgate.Allow {
				want = false
			}
		}
		if (r.Verdict == toolgate.Allow) != want {
			t.Fatalf("%q: allowed %v, each path alone %v: %s", args, r.Verdict == toolgate.Allow, want, r.Explanation)
		}
	})
}
