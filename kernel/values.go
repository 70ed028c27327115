package kernel

import (
	"github.com/verity-go/verity/internal/jsonvalue"
	"github.com/verity-go/verity/kernel/value"
)

// jv returns the implementation of v, for the plumbing value does not
// publish (validation, the canonical and hashed forms, list contents).
func jv(v value.Value) jsonvalue.Value { return jsonvalue.Value(v) }
