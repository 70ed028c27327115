// Package versioning implements the compatibility and versioning rules of
// specification 002 (Formal Contracts): semantic versions, which documents
// a library version can read, and which bump a published change needs.
//
//	old, _ := versioning.Parse("1.4.2")
//	next, _ := versioning.Parse("1.5.0")
//	err := versioning.CheckRelease(old, next, versioning.ChangeAddOptionalField) // nil: a minor bump suffices
//
// Within a major version only additive, optional changes are allowed, so a
// reader accepts a document of its own major version whatever the minor
// and patch (Compatible). Optional fields and enum extensions need a minor
// bump, clarifications a patch, removed required fields, changed enum
// semantics and changed id formats a major one (RequiredBump, CheckRelease).
package versioning

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Sentinel errors. Test with errors.Is.
var (
	// ErrInvalid: a string is not a semantic version, or a release does
	// not follow the versioning rules.
	ErrInvalid = errors.New("versioning: bad version")
	// ErrIncompatible: a document's major version is not the reader's.
	ErrIncompatible = errors.New("versioning: incompatible major version")
)

var semverRE = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// Version is a parsed Semantic Versioning 2.0.0 version.
type Version struct {
	Major, Minor, Patch uint64
	Prerelease          string // without the leading '-'
	Build               string // without the leading '+'
}

// Parse parses a semantic version ("1.0.0", "1.2.3-rc.1+build.5"). A
// well-formed version with a component beyond uint64 is an error wrapping
// strconv.ErrRange too.
// The error wraps ErrInvalid.
func Parse(s string) (Version, error) {
	m := semverRE.FindStringSubmatch(s)
	if m == nil {
		return Version{}, fmt.Errorf("%w: %q is not a semantic version (MAJOR.MINOR.PATCH)", ErrInvalid, s)
	}
	var v Version
	var err error
	for i, dst := range []*uint64{&v.Major, &v.Minor, &v.Patch} {
		if *dst, err = strconv.ParseUint(m[i+1], 10, 64); err != nil {
			return Version{}, fmt.Errorf("%w: %q: component out of range: %w", ErrInvalid, s, strconv.ErrRange)
		}
	}
	v.Prerelease, v.Build = m[4], m[5]
	return v, nil
}

// String formats the version.
func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Prerelease != "" {
		s += "-" + v.Prerelease
	}
	if v.Build != "" {
		s += "+" + v.Build
	}
	return s
}

// Compare orders versions by semver precedence (build metadata ignored):
// -1, 0 or +1.
func (v Version) Compare(w Version) int {
	if c := cmp.Compare(v.Major, w.Major); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Minor, w.Minor); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Patch, w.Patch); c != 0 {
		return c
	}
	switch {
	case v.Prerelease == w.Prerelease:
		return 0
	case v.Prerelease == "":
		return 1
	case w.Prerelease == "":
		return -1
	}
	a, b := strings.Split(v.Prerelease, "."), strings.Split(w.Prerelease, ".")
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := comparePrereleaseField(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func comparePrereleaseField(a, b string) int {
	na, ea := strconv.ParseUint(a, 10, 64)
	nb, eb := strconv.ParseUint(b, 10, 64)
	switch {
	case ea == nil && eb == nil:
		return cmp.Compare(na, nb)
	case ea == nil:
		return -1
	case eb == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// Compatible reports whether a document of version doc can be read by a
// library implementing version lib: same major version. A newer minor or
// patch is compatible (only optional fields and explicitly versioned enum
// extensions may have been added); an older one is too. The error wraps
// ErrIncompatible.
func Compatible(lib, doc Version) error {
	if lib.Major != doc.Major {
		return fmt.Errorf("%w: document schema_version %s has major version %d, this library reads major version %d (%s)",
			ErrIncompatible, doc, doc.Major, lib.Major, lib)
	}
	return nil
}

// Change is a kind of change to a contract, as the spec's "Compatibility and
// Versioning" section classifies them.
type Change int

// Changes.
const (
	// ChangeAddOptionalField is backward compatible: a minor bump.
	ChangeAddOptionalField Change = iota + 1
	// ChangeExtendEnum is backward compatible but needs an explicit bump: minor.
	ChangeExtendEnum
	// ChangeClarification leaves the shape identical: a patch bump.
	ChangeClarification
	// ChangeRemoveRequiredField is breaking: a major bump.
	ChangeRemoveRequiredField
	// ChangeEnumSemantics is breaking: a major bump.
	ChangeEnumSemantics
	// ChangeIDFormat is breaking: a major bump.
	ChangeIDFormat
)

// Bump is the version component a change requires.
type Bump int

// Bumps, in increasing order.
const (
	BumpNone Bump = iota + 1
	BumpPatch
	BumpMinor
	BumpMajor
)

func (b Bump) String() string {
	switch b {
	case BumpNone:
		return "none"
	case BumpPatch:
		return "patch"
	case BumpMinor:
		return "minor"
	case BumpMajor:
		return "major"
	}
	return "Bump(" + strconv.Itoa(int(b)) + ")"
}

// RequiredBump returns the smallest bump that publishes all the changes.
func RequiredBump(changes ...Change) Bump {
	need := BumpNone
	for _, c := range changes {
		var b Bump
		switch c {
		case ChangeClarification:
			b = BumpPatch
		case ChangeAddOptionalField, ChangeExtendEnum:
			b = BumpMinor
		default: // ChangeRemoveRequiredField, ChangeEnumSemantics, ChangeIDFormat and anything unknown
			b = BumpMajor
		}
		need = max(need, b)
	}
	return need
}

// BumpBetween returns which component changed from old to new, or an error
// wrapping ErrInvalid if new does not follow old (a lower version, or a
// bump that does not reset the lower components).
func BumpBetween(old, new Version) (Bump, error) {
	switch {
	case new.Major > old.Major:
		if new.Minor != 0 || new.Patch != 0 {
			return 0, fmt.Errorf("%w: %s → %s: a major bump resets minor and patch", ErrInvalid, old, new)
		}
		return BumpMajor, nil
	case new.Major < old.Major:
	case new.Minor > old.Minor:
		if new.Patch != 0 {
			return 0, fmt.Errorf("%w: %s → %s: a minor bump resets patch", ErrInvalid, old, new)
		}
		return BumpMinor, nil
	case new.Minor < old.Minor:
	case new.Patch > old.Patch:
		return BumpPatch, nil
	case new.Patch == old.Patch:
		return BumpNone, nil
	}
	return 0, fmt.Errorf("%w: %s → %s goes backwards", ErrInvalid, old, new)
}

// CheckRelease checks that publishing the changes as new after old follows
// the versioning rules: the bump is at least RequiredBump(changes...). A
// larger bump is allowed. The error wraps ErrInvalid.
func CheckRelease(old, new Version, changes ...Change) error {
	got, err := BumpBetween(old, new)
	if err != nil {
		return err
	}
	if need := RequiredBump(changes...); got < need {
		return fmt.Errorf("%w: %s → %s is a %s bump, the changes need a %s bump", ErrInvalid, old, new, got, need)
	}
	return nil
}
