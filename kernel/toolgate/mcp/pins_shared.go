package mcp

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/kernel/toolgate/pin"
)

// Pins shared by the replicas of a deployment (PinOptions.Shared): N
// proxies behind one address, each with its own log, pin one server's
// tools together. The first complete listing any replica claims is the
// first-use pin of all; a re-pin approved on one replica is recorded in
// the store (compare and set on the pin the approver saw) and applies on
// every replica from its next call of the tool, or its next listing.
//
// Each replica's pin.State still changes only by entries on its own log:
// before deciding a call (and before checking a listing) a replica reads
// the version of the server's shared pins; when it moved, it loads them
// and records what differs from its own as entries — a gatelog.Pin for
// the pins it adopts at first, a gatelog.Repin (the approver and reason
// the store holds, the reason saying another replica approved it) for
// each tool re-pinned since — applies them, and checks its last listing
// again, so that its own upstream's drift from the new pins is recorded
// and refused. A store that cannot be read refuses the call (fail
// closed). With a lock file (PinOptions.Lock) every replica loads the
// same file and nothing is shared.

// SharedPins is a store of pins shared by several Pins (kernel/sqlbudget's
// Store implements it).
type SharedPins interface {
	// ClaimPins records first, a server's first-use pins, unless pins of
	// the server are recorded, and returns the server's pins as
	// recorded (first's or an earlier claim's), the last re-pin of each
	// tool re-pinned since, and their version.
	ClaimPins(ctx context.Context, first gatelog.Pin) (gatelog.Pin, []gatelog.Repin, int64, error)
	// LoadPins returns the server's recorded pins, re-pins and version;
	// ok is false when none are recorded.
	LoadPins(ctx context.Context, server string) (p gatelog.Pin, repins []gatelog.Repin, version int64, ok bool, err error)
	// PinVersion returns the version of the server's pins, 0 for none.
	PinVersion(ctx context.Context, server string) (int64, error)
	// RecordRepin records r when the server's tool is still pinned at
	// r.Old, and returns the new version; otherwise it records nothing
	// and fails.
	RecordRepin(ctx context.Context, r gatelog.Repin) (int64, error)
}

// sharedReason starts the reason of a re-pin a replica adopts from the
// shared store.
const sharedReason = "approved on another replica: "

// shares reports whether the pins are shared (ps.mu held).
func (ps *Pins) shares() bool { return ps.shared != nil && !ps.st.Locked() }

// claimLocked claims the server's first-use pins with the listing tools
// (ps.mu held), when this replica has none yet, and adopts what the
// store holds.
func (ps *Pins) claimLocked(ctx context.Context, tools []pin.Tool, instr string) error {
	first := gatelog.Pin{Server: ps.server, Source: string(pin.SourceFirstUse), Tools: make(map[string]string, len(tools)), Instructions: instr}
	if ps.pinned {
		v, err := ps.shared.PinVersion(ctx, ps.server)
		if err != nil {
			return fmt.Errorf("toolgate/mcp: reading the shared pins of %q: %w", ps.server, err)
		}
		if v != 0 {
			return ps.syncLocked(ctx)
		}
		// Pinned on this replica's log before the store held any: its
		// pins are the claim.
		local, linstr := ps.st.Pins(ps.server)
		for tool, p := range local {
			first.Tools[tool] = p.Hash
		}
		first.Instructions = linstr
	} else {
		for _, t := range tools {
			if pin.ValidHash(t.Hash) && t.Name != "" {
				first.Tools[t.Name] = t.Hash
			}
		}
	}
	p, repins, v, err := ps.shared.ClaimPins(ctx, first)
	if err != nil {
		return fmt.Errorf("toolgate/mcp: claiming the shared pins of %q: %w", ps.server, err)
	}
	return ps.adoptLocked(ctx, p, repins, v)
}

// syncLocked adopts the shared pins when their version moved (ps.mu
// held).
func (ps *Pins) syncLocked(ctx context.Context) error {
	v, err := ps.sharedVersion(ctx)
	if err != nil {
		return err
	}
	return ps.syncToLocked(ctx, v)
}

// sharedVersion reads the version of the server's shared pins; Definition
// reads it before taking ps.mu, so that calls do not queue on the
// database's round trip.
func (ps *Pins) sharedVersion(ctx context.Context) (int64, error) {
	v, err := ps.shared.PinVersion(ctx, ps.server)
	if err != nil {
		return 0, fmt.Errorf("toolgate/mcp: reading the shared pins of %q: %w", ps.server, err)
	}
	return v, nil
}

// syncToLocked adopts the shared pins when their version, read as v,
// moved (ps.mu held).
func (ps *Pins) syncToLocked(ctx context.Context, v int64) error {
	if v == ps.version || v == 0 {
		return nil
	}
	p, repins, v, ok, err := ps.shared.LoadPins(ctx, ps.server)
	if err != nil {
		return fmt.Errorf("toolgate/mcp: reading the shared pins of %q: %w", ps.server, err)
	}
	if !ok {
		return nil
	}
	return ps.adoptLocked(ctx, p, repins, v)
}

// adoptLocked records and applies what of the shared pins p (and their
// re-pins) differs from this replica's, then checks the last listing
// against them (ps.mu held).
func (ps *Pins) adoptLocked(ctx context.Context, p gatelog.Pin, repins []gatelog.Repin, version int64) error {
	local, instr := ps.st.Pins(ps.server)
	var recs []any
	if !ps.pinned || instr != p.Instructions {
		recs = append(recs, p)
	} else {
		byTool := map[string]gatelog.Repin{}
		for _, r := range repins {
			byTool[r.Tool] = r
		}
		whole := false
		var changed []any
		for _, tool := range slices.Sorted(maps.Keys(p.Tools)) {
			h := p.Tools[tool]
			if local[tool].Hash == h {
				continue
			}
			r, ok := byTool[tool]
			if !ok || r.New != h {
				whole = true // no re-pin explains it: take the shared pins whole
				break
			}
			changed = append(changed, gatelog.Repin{Server: ps.server, Tool: tool, Old: local[tool].Hash, New: h,
				Approver: r.Approver, RequestedBy: r.RequestedBy, Reason: sharedReason + r.Reason})
		}
		for tool := range local {
			if _, ok := p.Tools[tool]; !ok {
				whole = true
			}
		}
		if whole {
			recs = []any{p}
		} else {
			recs = changed
		}
	}
	for _, r := range recs {
		kind := gatelog.KindRepin
		if _, ok := r.(gatelog.Pin); ok {
			kind = gatelog.KindPin
		}
		e, err := ps.log.AppendValue(context.WithoutCancel(ctx), kind, r)
		if err != nil {
			return fmt.Errorf("toolgate/mcp: recording the shared pins of %q: %w", ps.server, err)
		}
		next, err := ps.st.Apply(e)
		if err != nil {
			return fmt.Errorf("toolgate/mcp: applying the shared pins of %q: %w", ps.server, err)
		}
		ps.st = next
		ps.logger.Info("pins: adopted from the shared store", "server", ps.server, "kind", kind, "version", version)
	}
	ps.pinned, ps.version = true, version
	if ps.tools == nil {
		return nil
	}
	next, out := ps.st.Listed(pin.Listing{Server: ps.server, Instructions: ps.instr, Tools: ps.tools})
	if err := ps.append(ctx, out); err != nil {
		return err
	}
	ps.st, ps.drift = next, out.Drift
	ps.prune()
	return nil
}
