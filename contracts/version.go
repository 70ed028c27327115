package contracts

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/verity-go/verity/contracts/rule"
	"github.com/verity-go/verity/contracts/versioning"
)

// SchemaVersion is the version of the formal contracts this library
// implements. Documents whose schema_version has a different major version
// are rejected; a newer minor or patch of the same major is accepted, because
// the spec's compatibility rules only allow additive, optional changes within
// a major version (unknown fields are never rejected). Package versioning
// holds the rules.
const SchemaVersion = "1.0.0"

var libraryVersion = func() versioning.Version {
	v, err := versioning.Parse(SchemaVersion)
	if err != nil {
		panic(err) // SchemaVersion is a constant; a test parses it.
	}
	return v
}()

// majorMismatch returns the major-version violation of a document whose
// schema_version is a semantic version of another major, or nil.
func majorMismatch(tree any) *Violation {
	obj, ok := tree.(map[string]any)
	if !ok {
		return nil
	}
	s, ok := obj["schema_version"].(string)
	if !ok {
		return nil
	}
	return versionMismatch(s)
}

// versionMismatch returns the major-version violation of a schema_version
// s of another major, or nil (also when s is no semantic version).
func versionMismatch(s string) *Violation {
	v, err := versioning.Parse(s)
	major := strconv.FormatUint(v.Major, 10)
	switch {
	case errors.Is(err, strconv.ErrRange):
		// Well formed, so the schema's pattern passes it, but with a
		// component beyond uint64: its major is compared as text.
		major, _, _ = strings.Cut(s, ".")
	case err != nil:
		return nil // the schema reports a malformed version
	}
	if major == strconv.FormatUint(libraryVersion.Major, 10) {
		return nil
	}
	return &Violation{Path: "/schema_version", Rule: rule.MajorVersion, Message: fmt.Sprintf(
		"document schema_version %s has major version %s, this library reads major version %d (%s)",
		s, major, libraryVersion.Major, libraryVersion)}
}
