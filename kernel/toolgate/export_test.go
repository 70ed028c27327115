package toolgate

import "slices"

// The policy format's limits, which the package keeps to itself and the
// tests of toolgate_test read by their former names.
const (
	PolicyVersion          = newestPolicyVersion
	PolicySchemaID         = policySchemaID
	MaxPolicyCost          = maxPolicyCost
	MaxPolicySize          = maxPolicySize
	MaxPolicyWaiting       = maxPolicyWaiting
	MaxResultTextLimit     = maxResultTextLimit
	DefaultResultTextLimit = defaultResultTextLimit
	MaxShownArguments      = maxShownArguments
)

// NormalizePath is normalizePath, for the path fuzz target.
var NormalizePath = normalizePath

// WithoutCompiledSchemas returns p without the argument schemas
// ParsePolicy compiled for Compile, so that two readings of one file
// compare equal.
func WithoutCompiledSchemas(p Policy) Policy {
	p.Tools = slices.Clone(p.Tools)
	for i := range p.Tools {
		p.Tools[i].schema = nil
	}
	return p
}
