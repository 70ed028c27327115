package toolgate

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
)
