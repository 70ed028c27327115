package pin_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel/toolgate/pin"
	"github.com/verity-go/verity/trace"
)

// The naive model: per server, the pins, the last listing (nil before
// any since the pins were recorded), whether a lock was loaded.
type modelServer struct {
	pins    map[string]string // tool → pinned hash
	current map[string]string // tool → hash as last listed; nil: not listed since pinned
}

type model struct {
	servers map[string]*modelServer
	locked  bool
}

var (
	servers   = []string{"files", "mail"}
	toolNames = []string{"read", "write", "send"}
	people    = []string{"", "alice", "bob"}
)

// def is one of three definitions of each tool.
func def(tool string, v int) pin.Tool {
	raw := fmt.Sprintf(`{"name":%q,"description":"version %d","inputSchema":{"type":"object"}}`, tool, v)
	_, h, err := pin.HashDefinition([]byte(raw))
	if err != nil {
		panic(err)
	}
	return pin.Tool{Name: tool, Hash: h, Definition: []byte(raw)}
}

func drawListing(t *rapid.T) pin.Listing {
	l := pin.Listing{Server: rapid.SampledFrom(servers).Draw(t, "server")}
	for _, name := range toolNames {
		if v := rapid.IntRange(-1, 2).Draw(t, "version of "+name); v >= 0 {
			l.Tools = append(l.Tools, def(name, v))
		}
	}
	return l
}

func drawLock(t *rapid.T) pin.Lock {
	l := pin.Lock{Version: pin.LockVersion, Servers: map[string]pin.ServerLock{}}
	for _, s := range rapid.SliceOfNDistinct(rapid.SampledFrom(servers), 1, len(servers), rapid.ID).Draw(t, "lock servers") {
		sl := pin.ServerLock{Tools: map[string]string{}}
		for _, name := range toolNames {
			if v := rapid.IntRange(-1, 2).Draw(t, "locked version of "+name); v >= 0 {
				sl.Tools[name] = def(name, v).Hash
			}
		}
		l.Servers[s] = sl
	}
	return l
}

// pinMachine drives a State and the model side by side, appending every
// entry a step asks for to a log.
type pinMachine struct {
	s   pin.State
	m   model
	log *trace.Log
}

func newPinMachine(t *rapid.T) *pinMachine {
	return &pinMachine{m: model{servers: map[string]*modelServer{}}, log: trace.NewMemoryLog()}
}

func (pm *pinMachine) record(t *rapid.T, out pin.Outcome) {
	for _, e := range out.Entries {
		if _, err := pm.log.Append(context.Background(), e.Kind, e.Payload); err != nil {
			t.Fatalf("appending %s: %v", e.Kind, err)
		}
	}
}

func (pm *pinMachine) list(t *rapid.T) {
	l := drawListing(t)
	var out pin.Outcome
	pm.s, out = pm.s.Listed(l)
	pm.record(t, out)
	cur := map[string]string{}
	for _, tool := range l.Tools {
		cur[tool.Name] = tool.Hash
	}
	ms := pm.m.servers[l.Server]
	if ms == nil && !pm.m.locked {
		ms = &modelServer{pins: maps.Clone(cur)}
		pm.m.servers[l.Server] = ms
	}
	if ms == nil {
		ms = &modelServer{pins: map[string]string{}}
		pm.m.servers[l.Server] = ms
	}
	ms.current = cur
	// Outcome.Drift lists exactly the tools off their pins.
	var want []string
	for _, name := range toolNames {
		p, pinned := ms.pins[name]
		c, listed := cur[name]
		if pinned && (!listed || c != p) || !pinned && listed {
			want = append(want, name)
		}
	}
	slices.Sort(want)
	var got []string
	for _, d := range out.Drift {
		if d.Tool != "" {
			got = append(got, d.Tool)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listing %v: drift %v, the model says %v", l.Server, out.Drift, want)
	}
}

func (pm *pinMachine) loadLock(t *rapid.T) {
	l := drawLock(t)
	var out pin.Outcome
	pm.s, out = pm.s.LockLoaded(l)
	pm.record(t, out)
	pm.m.locked = true
	for name := range pm.m.servers {
		if _, named := l.Servers[name]; !named {
			pm.m.servers[name] = &modelServer{pins: map[string]string{}}
		}
	}
	for name, sl := range l.Servers {
		pm.m.servers[name] = &modelServer{pins: maps.Clone(sl.Tools)}
	}
}

func (pm *pinMachine) approve(t *rapid.T) {
	a := pin.Approval{Server: rapid.SampledFrom(servers).Draw(t, "server"), Tool: rapid.SampledFrom(toolNames).Draw(t, "tool"),
		Approver: rapid.SampledFrom(people).Draw(t, "approver"), RequestedBy: rapid.SampledFrom(people).Draw(t, "requested by"),
		Reason: "reviewed"}
	ms := pm.m.servers[a.Server]
	// The approval is of the present state, or of a stale one.
	if ms != nil && rapid.Bool().Draw(t, "of the present") {
		a.Old, a.New = ms.pins[a.Tool], ms.current[a.Tool]
	} else {
		if v := rapid.IntRange(-1, 2).Draw(t, "old"); v >= 0 {
			a.Old = def(a.Tool, v).Hash
		}
		a.New = def(a.Tool, rapid.IntRange(0, 2).Draw(t, "new")).Hash
	}
	next, out, err := pm.s.Repin(a)
	ok := ms != nil && ms.current != nil && a.Approver != "" && a.Approver != a.RequestedBy &&
		ms.current[a.Tool] != "" && ms.current[a.Tool] != ms.pins[a.Tool] && a.Old == ms.pins[a.Tool] && a.New == ms.current[a.Tool]
	if (err == nil) != ok {
		t.Fatalf("re-pin %+v: error %v, the model says allowed=%v", a, err, ok)
	}
	if err != nil {
		if len(out.Entries) != 0 {
			t.Fatalf("a refused re-pin asks for entries: %v", out.Entries)
		}
		return
	}
	pm.s = next
	pm.record(t, out)
	ms.pins[a.Tool] = a.New
}

// check is the guarantee: a call runs only against a definition whose
// hash is pinned at that moment — Check allows it exactly when the
// tool's pinned hash is the one its server last listed (its pin, before
// any listing since), and returns that hash.
func (pm *pinMachine) check(t *rapid.T) {
	for _, srv := range servers {
		ms := pm.m.servers[srv]
		for _, tool := range toolNames {
			h, err := pm.s.Check(srv, tool)
			var want string
			if ms != nil {
				if p, pinned := ms.pins[tool]; pinned && (ms.current == nil || ms.current[tool] == p) {
					want = p
				}
			}
			if want == "" && err == nil {
				t.Fatalf("Check(%s, %s) allowed %s; the model: not pinned or not what is listed", srv, tool, h)
			}
			if want != "" && (err != nil || h != want) {
				t.Fatalf("Check(%s, %s) = %s, %v; the model: allowed at %s", srv, tool, h, err, want)
			}
		}
	}
}

// TestCallRunsOnlyAgainstAPinnedDefinition: for any sequence of
// listings (changed, new, removed, restored tools), lock files and
// approvals (by the asker, by nobody, stale or of the present), a call
// runs only against a definition whose hash is pinned at that moment,
// and always runs when it is.
func TestCallRunsOnlyAgainstAPinnedDefinition(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pm := newPinMachine(t)
		t.Repeat(map[string]func(*rapid.T){
			"list":    pm.list,
			"lock":    pm.loadLock,
			"approve": pm.approve,
			"":        pm.check,
		})
	})
}

// TestReplayYieldsTheLivePins: replaying the entries the steps asked
// for rebuilds the State the live steps returned: the same pins, the
// same answer to every call, the same drift on the next listing.
func TestReplayYieldsTheLivePins(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pm := newPinMachine(t)
		steps := rapid.IntRange(0, 30).Draw(t, "steps")
		for range steps {
			switch rapid.IntRange(0, 4).Draw(t, "step") {
			case 0:
				pm.loadLock(t)
			case 1:
				pm.approve(t)
			default:
				pm.list(t)
			}
		}
		replayed, err := pin.Replay(pm.log.Entries(context.Background(), 0))
		if err != nil {
			t.Fatal(err)
		}
		if replayed.Locked() != pm.s.Locked() {
			t.Fatalf("locked: replayed %v, live %v", replayed.Locked(), pm.s.Locked())
		}
		for _, srv := range servers {
			lp, li := pm.s.Pins(srv)
			rp, ri := replayed.Pins(srv)
			if !maps.Equal(lp, rp) || li != ri {
				t.Fatalf("server %s: replayed pins %v %q, live %v %q", srv, rp, ri, lp, li)
			}
			for _, tool := range toolNames {
				lh, lerr := pm.s.Check(srv, tool)
				rh, rerr := replayed.Check(srv, tool)
				if lh != rh || fmt.Sprint(lerr) != fmt.Sprint(rerr) {
					t.Fatalf("Check(%s, %s): replayed %s %v, live %s %v", srv, tool, rh, rerr, lh, lerr)
				}
			}
		}
		l := drawListing(t)
		_, lo := pm.s.Listed(l)
		_, ro := replayed.Listed(l)
		if fmt.Sprint(lo) != fmt.Sprint(ro) {
			t.Fatalf("the next listing: replayed %v, live %v", ro, lo)
		}
	})
}

// snapshot is everything a State answers, for comparisons.
func snapshot(s pin.State) string {
	var b strings.Builder
	fmt.Fprintln(&b, s.Locked())
	for _, srv := range servers {
		p, i := s.Pins(srv)
		fmt.Fprintln(&b, srv, p, i)
		for _, tool := range toolNames {
			h, err := s.Check(srv, tool)
			fmt.Fprintln(&b, tool, h, err)
		}
	}
	return b.String()
}

// TestStepsLeaveTheOldStateAsItWas: a State is a value — a listing, a
// lock file or a re-pin returns a new one and the old one answers as
// before (a host whose entries could not be appended keeps it).
func TestStepsLeaveTheOldStateAsItWas(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pm := newPinMachine(t)
		for range rapid.IntRange(0, 20).Draw(t, "steps") {
			before := pm.s
			was := snapshot(before)
			switch rapid.IntRange(0, 4).Draw(t, "step") {
			case 0:
				pm.loadLock(t)
			case 1:
				pm.approve(t)
			default:
				pm.list(t)
			}
			if now := snapshot(before); now != was {
				t.Fatalf("the old State changed:\n%s\nnow\n%s", was, now)
			}
		}
	})
}

// FuzzApply: any entry applied to a State with pins is applied or an
// error, never a panic, and an error leaves the State as it was.
func FuzzApply(f *testing.F) {
	const h = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	f.Add("toolgate.pin", []byte(`{"server":"files","source":"lock","tools":{"read":"`+h+`"}}`))
	f.Add("toolgate.drift", []byte(`{"server":"files","tool":"read","change":"removed","pinned":"`+h+`"}`))
	f.Add("toolgate.repin", []byte(`{"server":"x","tool":"y","new":"`+h+`","approver":"a","reason":""}`))
	f.Add("toolgate.drift", []byte(`{"server":"files","change":"instructions","seen":"`+h+`"}`))
	f.Fuzz(func(t *testing.T, kind string, payload []byte) {
		s, _ := pin.State{}.Listed(listingOf(3, 0))
		before := fmt.Sprint(s.Pins("files"))
		next, err := s.Apply(trace.Entry{Kind: kind, Payload: payload})
		if err != nil && fmt.Sprint(next.Pins("files")) != before {
			t.Fatal("a refused entry changed the State")
		}
		for i := range 3 {
			_, _ = next.Check("files", fmt.Sprintf("tool_%d", i))
		}
		if fmt.Sprint(s.Pins("files")) != before {
			t.Fatal("Apply changed the State it was given")
		}
	})
}
