package contracts

import (
	"fmt"
	"slices"
)

// Kind names one contract. The same names are used by the API, by the
// examples/validate command (-kind) and by the schema files
// (schemas/<kind>.schema.json).
type Kind string

// The contract kinds.
const (
	KindRunRecord            Kind = "run_record"
	KindRCAReport            Kind = "rca_report"
	KindComplianceReport     Kind = "compliance_report"
	KindIncidentDossier      Kind = "incident_dossier"
	KindPolicyControl        Kind = "policy_control"
	KindPolicyControlLibrary Kind = "policy_control_library"
	KindAnnotation           Kind = "annotation"
)

var allKinds = []Kind{
	KindAnnotation,
	KindComplianceReport,
	KindIncidentDossier,
	KindPolicyControl,
	KindPolicyControlLibrary,
	KindRCAReport,
	KindRunRecord,
}

// Kinds returns every contract kind, sorted by name.
func Kinds() []Kind { return slices.Clone(allKinds) }

// ParseKind returns the Kind named s, or an error wrapping ErrUnknownKind.
func ParseKind(s string) (Kind, error) {
	k := Kind(s)
	if slices.Contains(allKinds, k) {
		return k, nil
	}
	return "", fmt.Errorf("%w: %q (known: %v)", ErrUnknownKind, s, allKinds)
}

// SchemaID returns the absolute $id of the kind's JSON Schema.
func (k Kind) SchemaID() string { return schemaBase + string(k) + ".schema.json" }

// versioned reports whether documents of the kind carry a schema_version
// that is checked against the library's SchemaVersion.
func (k Kind) versioned() bool {
	switch k {
	case KindPolicyControl, KindPolicyControlLibrary:
		return false
	}
	return true
}
