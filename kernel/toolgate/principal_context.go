package toolgate

import "context"

// principalKey is the context key of WithPrincipal.
type principalKey struct{}

// WithPrincipal returns ctx carrying p, the principal that the calls made
// under ctx are made for. A host that authenticates its users puts the
// principal in the request's context; the framework adapters
// (kernel/toolgate/adk, eino, mcp) read it with PrincipalFrom and put it
// in Call.Principal. The context keeps its own copy: changing p's slices
// or map afterwards does not change it.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p.clone())
}

// PrincipalFrom returns the principal WithPrincipal put in ctx (a copy
// the caller may change), and whether there was one.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	if !ok {
		return Principal{}, false
	}
	return p.clone(), true
}
