package toolgate_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

var traceIDForm = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestEntriesNameTheirTrace: every entry a call makes names the trace
// the host says it was made in (Call.Trace) — its refusal's trace, its
// execution's tag "trace:<id>", its result's trace — when it is a W3C
// trace id (32 lower-case hex digits, not all zero), and none names
// anything else.
func TestEntriesNameTheirTrace(t *testing.T) {
	checks := 0
	defer func() { t.Logf("%d calls checked", checks) }()
	valid := rapid.StringMatching(`[0-9a-f]{32}`)
	rapid.Check(t, func(rt *rapid.T) {
		log := newLog(rt)
		cfg := testConfig()
		g, err := toolgate.New(ctx, log, mustCompile(cfg))
		require.NoError(rt, err)
		for range rapid.IntRange(1, 6).Draw(rt, "calls") {
			checks++
			id := rapid.OneOf(valid, rapid.String(), rapid.Just(strings.Repeat("0", 32)), rapid.Just(strings.Repeat("A", 32))).Draw(rt, "trace")
			want := ""
			if traceIDForm.MatchString(id) && id != strings.Repeat("0", 32) {
				want = id
			}
			c := call(rapid.SampledFrom([]string{"read_file", "search", "format_disk"}).Draw(rt, "tool"), `{"path":"a"}`)
			c.Trace = id
			d, err := g.Before(ctx, c)
			require.NoError(rt, err)
			e := entryOf(rt, log, d.Seq)
			switch d.Verdict {
			case toolgate.Refuse:
				if e.Kind == gatelog.KindRefuse {
					v, err := gatelog.Decode(e)
					require.NoError(rt, err)
					require.Equal(rt, want, v.(gatelog.Refuse).Trace)
				}
				continue
			case toolgate.Allow:
			default:
				rt.Fatalf("verdict %v", d.Verdict)
			}
			x, err := kernel.DecodeEntry(e)
			require.NoError(rt, err)
			var tags []string
			switch x := x.(type) {
			case kernel.ExecuteEntry:
				tags = x.Action.Tags
			case kernel.ReserveEntry:
				tags = x.Action.Tags
			}
			require.Equal(rt, want != "", slices.Contains(tags, "trace:"+want), "tags %v", tags)
			for _, tag := range tags {
				if v, ok := strings.CutPrefix(tag, "trace:"); ok {
					require.Equal(rt, want, v)
				}
			}
			out, err := g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"x"`)})
			require.NoError(rt, err)
			v, err := gatelog.Decode(entryOf(rt, log, out.Seq))
			require.NoError(rt, err)
			require.Equal(rt, want, v.(gatelog.Result).Trace)
		}
	})
}

// entryOf is entryAt for a rapid.T.
func entryOf(t *rapid.T, log *trace.Log, seq uint64) trace.Entry {
	for e, err := range log.Entries(ctx, seq) {
		require.NoError(t, err)
		return e
	}
	t.Fatalf("no entry %d", seq)
	return trace.Entry{}
}
