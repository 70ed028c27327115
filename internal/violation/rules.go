package violation

// The rules every strict JSON reader in Verity reports, named once. The
// public packages re-export them under their own names (claims.RuleType,
// belief.RuleType, …); internal/strictjson reports them.
const (
	RuleSyntax       = "syntax"        // not one strict JSON text: grammar, UTF-8, surrogates, depth, unsafe numbers
	RuleDuplicateKey = "duplicate_key" // an object with a member twice (compared after unescaping)
	RuleUnknownField = "unknown_field" // a member the format does not define
	RuleType         = "type"          // the wrong JSON type (a string where a number belongs, …)
	RuleRequired     = "required"      // a required member is missing
)
