package toolgate_test

import (
	"errors"
	"path"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// FuzzNormalizePath: NormalizePath never panics; a refusal wraps
// ErrUnsafePath; an accepted path gives clean absolute forms with no ".."
// element and no character the gate refuses, the first of them the path
// itself cleaned; a path without "%" has exactly one form, and normalising
// a form again gives it back.
func FuzzNormalizePath(f *testing.F) {
	for _, s := range []string{"/srv/data/report.csv", "/srv/data/../../etc/passwd", "//srv//data", "./x", "/srv/data/",
		"/srv/data/%2e%2e/x", "/srv/data/%252e%252e/x", "/a/%zz", "/a/b\x00c", "/a\\b", "/srv/data\uff0f..", "/srv/d\u0430ta",
		"/cafe\u0301", "/a/\u200b", "/A/B", "/%2F%2f", "/%25", "", "/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		forms, err := toolgate.NormalizePath(p)
		if err != nil {
			if !errors.Is(err, toolgate.ErrUnsafePath) {
				t.Fatalf("%q: error %v does not wrap ErrUnsafePath", p, err)
			}
			if strings.ContainsAny(err.Error(), "\n\r\x00") {
				t.Fatalf("%q: error %q is not one line", p, err)
			}
			return
		}
		if len(forms) == 0 || forms[0] != path.Clean(p) {
			t.Fatalf("%q: forms %q, want %q first", p, forms, path.Clean(p))
		}
		if !strings.Contains(p, "%") && len(forms) != 1 {
			t.Fatalf("%q has no escape but %d forms", p, len(forms))
		}
		for _, fm := range forms {
			if !strings.HasPrefix(fm, "/") || path.Clean(fm) != fm {
				t.Fatalf("%q: form %q is not clean and absolute", p, fm)
			}
			for _, e := range strings.Split(fm, "/") {
				if e == ".." || e == "." {
					t.Fatalf("%q: form %q keeps %q", p, fm, e)
				}
			}
			if strings.ContainsFunc(fm, func(r rune) bool { return unicode.IsControl(r) || r == '\\' || unicode.Is(unicode.Cf, r) }) {
				t.Fatalf("%q: form %q has a refused character", p, fm)
			}
			if !strings.Contains(fm, "%") {
				again, err := toolgate.NormalizePath(fm)
				if err != nil || len(again) != 1 || again[0] != fm {
					t.Fatalf("%q: form %q normalises to %q, %v", p, fm, again, err)
				}
			}
		}
	})
}

// FuzzDecide: whatever arguments, tool and principal a call carries, the
// decision core decides without panicking, names a rule whenever it does
// not refuse the tool as unknown or as one no rule admits, and explains a
// refusal in one line.
func FuzzDecide(f *testing.F) {
	comp, err := toolgate.Policy{Budget: 1000, MinCost: 1, Tools: conditionRules}.Compile()
	if err != nil {
		f.Fatal(err)
	}
	f.Add("read_file", []byte(`{"path": "/srv/data/../secret/x"}`), "admin")
	f.Add("read_file", []byte(`{"path": "/srv/data/a", "path": "/srv/secret/b"}`), "")
	f.Add("sql", []byte(`{"q": "SELECT 1"}`), "db:read")
	f.Add("post", []byte("\xff"), "")
	f.Add("read_file", []byte(`{"path": "/srv/data/\u2028x"}`), "")
	f.Fuzz(func(t *testing.T, tool string, args []byte, group string) {
		p := toolgate.Principal{Issuer: "idp", Subject: "s", Groups: []string{group}, Scopes: []string{group}}
		s := toolgate.Snapshot{Labels: map[string]bool{"untrusted_input": true, "private_data": group == ""}}
		r := comp.Decide(s, toolgate.Call{Tool: tool, Arguments: args, Principal: p}, time.Unix(0, 0))
		switch r.Verdict {
		case toolgate.Allow, toolgate.Refuse:
		default:
			t.Fatalf("verdict %v", r.Verdict)
		}
		if r.Condition != gatelog.ConditionUnknownTool && r.Condition != gatelog.ConditionNoRule && !r.Rule.Found {
			t.Fatalf("condition %q without a rule", r.Condition)
		}
		if one := toolgate.OneLine(r.Explanation); one != r.Explanation && r.Verdict == toolgate.Refuse {
			// The gate makes it one line; the core's own words must not need it
			// beyond what the arguments carry.
			if !strings.ContainsAny(string(args), "\n\r\u2028\u2029") && !strings.ContainsAny(tool, "\n\r\u2028\u2029") {
				t.Fatalf("explanation %q is not one line", r.Explanation)
			}
		}
	})
}
