package main

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/kernel/toolgate/gateway"
	"github.com/verity-go/verity/kernel/toolgate/pin"
	"github.com/verity-go/verity/trace"
)

// definitionTag starts the tag of a gate's kernel execution that names
// the pinned definition the call ran against (toolgate.Call.Definition).
const definitionTag = "definition:"

// pinReplay rebuilds the pins a log records (pin.State, from the
// toolgate.pin, drift and repin entries) and checks that every decision
// naming a definition — a gate's refusal, a kernel execution tagged
// definition:<hash>, a result — names one pinned at that moment, and
// that a result names its execution's.
type pinReplay struct {
	state     pin.State
	servers   map[string]bool
	entries   int
	decisions int
	execs     map[string]string // exec id → the definition its execution named
}

func newPinReplay() *pinReplay {
	return &pinReplay{servers: map[string]bool{}, execs: map[string]string{}}
}

// add replays one entry: an error is a disagreement.
func (p *pinReplay) add(e trace.Entry) error {
	switch e.Kind {
	case gatelog.KindPin, gatelog.KindDrift, gatelog.KindRepin:
		next, err := p.state.Apply(e)
		if err != nil {
			return err
		}
		v, _ := gatelog.Decode(e) // Apply read it
		switch v := v.(type) {
		case gatelog.Pin:
			p.servers[v.Server] = true
		case gatelog.Drift:
			p.servers[v.Server] = true
		case gatelog.Repin:
			p.servers[v.Server] = true
		}
		p.state = next
		p.entries++
	case gatelog.KindRefuse:
		v, err := gatelog.Decode(e)
		if err != nil {
			return err
		}
		if r := v.(gatelog.Refuse); r.Definition != "" {
			return p.pinned("refusal of call "+r.CallID, r.Tool, r.Definition, false)
		}
	case gatelog.KindResult:
		v, err := gatelog.Decode(e)
		if err != nil {
			return err
		}
		r := v.(gatelog.Result)
		if want := p.execs[r.ExecID]; r.Definition != want {
			return fmt.Errorf("the result of call %s (exec %s) names definition %s, its execution %s", r.CallID, r.ExecID, orNone(r.Definition), orNone(want))
		}
		delete(p.execs, r.ExecID)
	case kernel.KindExecute, kernel.KindReserve:
		if !bytes.Contains(e.Payload, []byte(definitionTag)) {
			return nil
		}
		x, err := kernel.DecodeEntry(e)
		if err != nil {
			return err
		}
		var rec kernel.Record
		switch v := x.(type) {
		case kernel.ExecuteEntry:
			rec = v.Record
		case kernel.ReserveEntry:
			rec = v.Record
		}
		for _, tag := range rec.Action.Tags {
			if def, ok := strings.CutPrefix(tag, definitionTag); ok {
				if err := p.pinned("execution "+rec.ExecID, rec.Action.ID, def, true); err != nil {
					return err
				}
				p.execs[rec.ExecID] = def
			}
		}
	}
	return nil
}

// pinned checks that def is the pinned definition of tool, on a server
// the log pins, at this point of the log — and, for a call that ran
// (listed), that the server listed it at its pin then (pin.State.Check).
// A refusal names the pin it refused against even when the server lists
// another definition (the host refuses a drifted tool so).
func (p *pinReplay) pinned(what, tool, def string, listed bool) error {
	p.decisions++
	var why []string
	for _, s := range slices.Sorted(maps.Keys(p.servers)) {
		name := tool
		if local, ok := strings.CutPrefix(tool, s+gateway.Separator); ok {
			// A gateway's call names its tool server__tool; the server
			// pins it under its own name.
			name = local
		}
		h, err := p.state.Check(s, name)
		if err == nil && h == def {
			return nil
		}
		if pins, _ := p.state.Pins(s); !listed && pins[name].Hash == def {
			return nil
		}
		if err != nil {
			why = append(why, err.Error())
		} else {
			why = append(why, fmt.Sprintf("server %q pins it at %s", s, h))
		}
	}
	if len(why) == 0 {
		why = append(why, "the log pins no server before it")
	}
	return fmt.Errorf("%s of tool %q was decided against definition %s, which is not pinned there: %s", what, tool, def, strings.Join(why, "; "))
}
