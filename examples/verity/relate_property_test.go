package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// TestRelateNamesEveryCallDecidedInTwoLogs: for logs whose calls are
// drawn from one small pool of (caller, call id) pairs, the report names
// exactly the pairs a naive count finds in two logs, once for each pair
// of logs holding one, and no execution (whose ids each log draws on its
// own); the callers in several logs are exactly those the count finds.
func TestRelateNamesEveryCallDecidedInTwoLogs(t *testing.T) {
	ctx := context.Background()
	comp, err := toolgate.Policy{Budget: 10 * kernel.Unit, MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{
		{Match: "read_*", Cost: kernel.Unit / 10},
	}}.Compile()
	require.NoError(t, err)
	var conflicts int
	defer func() { require.Positive(t, conflicts, "no generated logs shared a call") }()
	rapid.Check(t, func(rt *rapid.T) {
		dir := t.TempDir()
		n := rapid.IntRange(2, 3).Draw(rt, "logs")
		holders := map[string]int{}    // caller + "\x00" + id → logs deciding it
		callerLogs := map[string]int{} // caller → logs naming it
		var sources []Source
		for i := range n {
			path := filepath.Join(dir, fmt.Sprintf("r%d.trace", i))
			f, err := trace.OpenFile(path, trace.FileOptions{})
			require.NoError(rt, err)
			log, err := trace.NewLog(f)
			require.NoError(rt, err)
			k := 0
			g, err := toolgate.New(ctx, log, comp, toolgate.WithIDs(func() string { k++; return fmt.Sprintf("exec-%d-%d", i, k) }))
			require.NoError(rt, err)
			ids := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"c1", "c2", "c3", "c4", "c5"}), 1, 4, rapid.ID[string]).Draw(rt, "ids")
			named := map[string]bool{}
			for _, id := range ids {
				caller := rapid.SampledFrom([]string{"alice", "bob"}).Draw(rt, "caller")
				tool := rapid.SampledFrom([]string{"read_file", "format_disk"}).Draw(rt, "tool")
				d, err := g.Before(ctx, toolgate.Call{Tool: tool, ID: id, Caller: caller, Arguments: []byte(`{}`)})
				require.NoError(rt, err)
				if d.Verdict == toolgate.Allow {
					_, err = g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"ok"`)})
					require.NoError(rt, err)
				}
				holders[caller+"\x00"+id]++
				named[caller] = true
			}
			for c := range named {
				callerLogs[c]++
			}
			require.NoError(rt, f.Close())
			src, err := ParseSource(path)
			require.NoError(rt, err)
			sources = append(sources, src)
		}
		r := relate(ctx, &env{stdout: io.Discard, stderr: io.Discard}, sources, nil)
		if len(r.Conflicts) == 0 {
			require.NoError(rt, r.err())
		} else {
			require.ErrorIs(rt, r.err(), errConflict)
		}
		want := 0
		for key, m := range holders {
			caller, id, _ := strings.Cut(key, "\x00")
			pairs := m * (m - 1) / 2
			want += pairs
			got := 0
			for _, c := range r.Conflicts {
				if strings.HasPrefix(c, fmt.Sprintf("call %s of caller %q ", id, caller)) {
					got++
				}
			}
			require.Equal(rt, pairs, got, "%s of %s in %d logs: %v", id, caller, m, r.Conflicts)
		}
		require.Len(rt, r.Conflicts, want, "no execution conflicts: %v", r.Conflicts)
		conflicts += want
		for c, m := range callerLogs {
			if m > 1 {
				require.Len(rt, r.Principals[c], m)
			} else {
				require.NotContains(rt, r.Principals, c)
			}
		}
		for _, f := range r.Logs {
			require.NoError(rt, f.Err)
		}
	})
}
