package toolgate

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Principal is who a call is made for, as the host authenticated them:
// an identity provider (Issuer) and its name for the user or service
// (Subject), the groups they belong to, the scopes their credential
// grants, and any other attributes the host knows. Adapters fill it from
// what their framework says (an ADK user and app, an eino context value,
// an MCP request's authenticated user). The gate trusts it as given: it
// is the host's job to authenticate, the gate's to decide.
type Principal struct {
	Issuer, Subject string
	Groups, Scopes  []string
	Attributes      map[string]string
}

// Key returns the caller key of the principal's calls (a Call whose
// Caller is empty is charged to it): the issuer and the subject joined
// by "|", each with "%", "|" and control characters percent-encoded
// ("https://idp.example|alice"), so that two different principals never
// share a key. It is "" when both Issuer and Subject are empty (the zero
// Principal, the anonymous caller). Principal keys and the Caller keys a
// host chooses itself share one namespace: a host that mixes both keeps
// its own keys free of "|".
func (p Principal) Key() string {
	if p.Issuer == "" && p.Subject == "" {
		return ""
	}
	var b strings.Builder
	b.Grow(len(p.Issuer) + len(p.Subject) + 1)
	keyEscape(&b, p.Issuer)
	b.WriteByte('|')
	keyEscape(&b, p.Subject)
	return b.String()
}

func keyEscape(b *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' || c == '|' || c < 0x20 || c == 0x7f {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
}

// IsZero reports whether p names nobody and carries nothing.
func (p Principal) IsZero() bool {
	return p.Issuer == "" && p.Subject == "" && len(p.Groups) == 0 && len(p.Scopes) == 0 && len(p.Attributes) == 0
}

// clone copies what p shares with its caller.
func (p Principal) clone() Principal {
	p.Groups = slices.Clone(p.Groups)
	p.Scopes = slices.Clone(p.Scopes)
	if p.Attributes != nil {
		m := make(map[string]string, len(p.Attributes))
		for k, v := range p.Attributes {
			m[k] = v
		}
		p.Attributes = m
	}
	return p
}

// RateWindows counts calls in sliding windows shared by several gates (a
// SQL implementation lives in kernel/sqlbudget). A gate given one with
// WithSharedWindows asks it, instead of its own per-caller windows,
// whether a call of a rule with a "rate" fits.
type RateWindows interface {
	// Admit records one call under key at time at when fewer than limit calls under key
	// fall within (at-per, at] (or later, when the clock stepped back), and reports whether it did and how many it saw before.
	Admit(ctx context.Context, key string, at time.Time, per time.Duration, limit int) (admitted bool, seen int, err error)
}

// WithSharedWindows makes the gate count the calls of rules with a rate
// in w, shared with every other gate using it, rather than in each
// caller's own windows (see RateWindows for the keys).
func WithSharedWindows(w RateWindows) Option {
	return func(o *options) { o.windows = w }
}
