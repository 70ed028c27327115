package toolgate

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/verity-go/verity/claims"
)

// k-of-n approvals. A tier's approvers that name one group k times
// ("group:ops" twice; in a file {"group": "ops", "count": 2}) wait for k
// distinct members of the group. The claims session, whose approvers are
// distinct names each deciding once, is given k slots instead
// ("group:ops#1" … "group:ops#k", claimsApprovers): each approval fills
// the first slot still open, and the bundle is published when the last
// one is, refused on any denial, as for a list of names. The gate keeps
// the rest: one principal (or one approver name) fills one slot
// (answerable), a PRIVILEGE call's own principal fills none without
// self_approval, and ApprovalRequest.Awaiting names the group once per
// slot still open.

// maxApproverCount bounds k in {"group": G, "count": k}.
const maxApproverCount = 16

// quorumOf reports whether names is one group named k ≥ 1 times, and
// returns the group's approver name ("group:G") and k.
func quorumOf(names []string) (name string, k int, ok bool) {
	if len(names) == 0 || !strings.HasPrefix(names[0], GroupPrefix) {
		return "", 0, false
	}
	for _, n := range names[1:] {
		if n != names[0] {
			return "", 0, false
		}
	}
	return names[0], len(names), true
}

// approversOf is the approvers a file's member reads as.
func approversOf(w approversWire) map[claims.RiskTier][]string {
	if w == nil {
		return nil
	}
	m := make(map[claims.RiskTier][]string, len(w))
	for t, l := range w {
		m[t] = []string(l)
	}
	return m
}

// slotName is the claims approver name of slot i (from 1) of name.
func slotName(name string, i int) string { return name + "#" + strconv.Itoa(i) }

// claimsApprovers is the claims policy's approvers for a's: a group
// named k ≥ 2 times becomes its k slots.
func claimsApprovers(a map[claims.RiskTier][]string) map[claims.RiskTier][]string {
	out := make(map[claims.RiskTier][]string, len(a))
	for _, t := range slices.Sorted(maps.Keys(a)) {
		names := a[t]
		if name, k, ok := quorumOf(names); ok && k > 1 {
			slots := make([]string, k)
			for i := range slots {
				slots[i] = slotName(name, i+1)
			}
			out[t] = slots
			continue
		}
		out[t] = slices.Clone(names)
	}
	return out
}

// slotsOf reports whether a bundle's required approvers are the k ≥ 2
// slots of one group name (claimsApprovers), and returns that name.
// Compile refuses a policy whose own names would read so
// (looksLikeSlots).
func slotsOf(required []string) (name string, ok bool) {
	if len(required) < 2 {
		return "", false
	}
	// The group may hold '#': the slot number is after the last one.
	i := strings.LastIndexByte(required[0], '#')
	if i < 0 || !strings.HasPrefix(required[0], GroupPrefix) {
		return "", false
	}
	name = required[0][:i]
	for j, r := range required {
		if r != slotName(name, j+1) {
			return "", false
		}
	}
	return name, true
}

// looksLikeSlots reports whether a tier's names would read as slots.
func looksLikeSlots(names []string) bool {
	_, ok := slotsOf(names)
	return ok
}

// baseName is the approver name a claims approver name of b answers
// for: a slot's group name, else itself.
func baseName(required []string, name string) string {
	if base, ok := slotsOf(required); ok {
		if i := strings.LastIndexByte(name, '#'); i >= 0 && name[:i] == base {
			return base
		}
	}
	return name
}

// awaitingOf is ApprovalRequest.Awaiting for the bundle b: the
// approvers who have not decided yet, a group of k slots named once per
// open slot.
func awaitingOf(b claims.ClaimBundle) []string {
	open := claims.Pending{Bundle: b}.Awaiting()
	if _, ok := slotsOf(b.RequiredApprovals); !ok {
		return open
	}
	for i, n := range open {
		open[i] = baseName(b.RequiredApprovals, n)
	}
	return open
}
