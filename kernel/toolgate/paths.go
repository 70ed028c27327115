package toolgate

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PathCondition is a rule's condition on a path argument: the string at
// Argument (an RFC 6901 JSON Pointer into the call's arguments, such as
// "/path") names a file under one of the directories Under. Each
// directory is absolute and written clean, as path.Clean leaves it: a
// root such as "/srv/data/../etc" or "/srv/data/" is refused when the
// rules are compiled, never read as another directory.
//
// The gate decides on the string the agent sent, normalised as a POSIX
// file system would read it, and refuses what it cannot read one way:
//
//   - The path is absolute ("/srv/data/x"). "//" and "/./" collapse, ".."
//     removes the element before it (never climbing above "/"), trailing
//     slashes drop: "/srv/data/../../etc/passwd" is "/etc/passwd", not
//     under "/srv/data".
//   - Percent-encoding is decoded, again and again while any is left
//     ("%252e" → "%2e" → "."), and every form — as sent and each decoded
//     one — must give the same answer, since the gate cannot know whether
//     the tool decodes: "/srv/data/%2e%2e/secret" is refused.
//   - With CaseInsensitive, names compare under Unicode simple case
//     folding, as on the default file systems of macOS and Windows.
//   - Refused outright (the call is refused by the rule, not passed on to
//     the next one): a relative path (its base is the tool's working
//     directory, which the gate does not know), NUL and other control
//     characters, a backslash (a separator on Windows, a name character
//     elsewhere), a malformed percent escape, Unicode format characters
//     (zero-width, bidirectional controls), combining marks (file systems
//     differ in whether they normalise them: APFS does, ext4 does not),
//     fullwidth forms (U+FF00–U+FFEF) and look-alikes of "/", "\" and "."
//     (U+2215 DIVISION SLASH, U+2044 FRACTION SLASH, U+2024 ONE DOT
//     LEADER, …), which a tool that applies Unicode compatibility
//     normalisation would turn into separators and dots.
//   - An absent argument, or one that is neither a string nor an array,
//     does not satisfy the condition: the rule does not apply.
//   - An array of paths (the filesystem server's read_multiple_files
//     takes {"paths": [...]}) satisfies the condition of an allowing rule
//     when every path is under a root, and of a refusing rule when any
//     is: a path never slips past a deny-list, nor into an allow-list, in
//     the company of others. Each element is read as a path alone (and
//     refused as one); an element that is not a string, and an empty
//     array, which names no path the gate can check (a tool may read it
//     as "everything"), refuse the call at the rule.
//
// What it cannot know: symbolic links and bind mounts ("/srv/data/link"
// may point anywhere), hard links, mount points, or how the tool itself
// resolves the name. A tool that must stay beneath a directory should
// also open files relative to it without following links (Linux openat2
// with RESOLVE_BENEATH, or O_NOFOLLOW on every element).
type PathCondition struct {
	Argument        string
	Under           []string
	CaseInsensitive bool
}

// pathLookAlikes are characters that Unicode compatibility normalisation
// (NFKC) or a careless display turns into "/", "\" or ".".
var pathLookAlikes = map[rune]bool{
	'\u2215': true, '\u2044': true, '\u29F8': true, '\u29F9': true, '\u2216': true, '\uFE68': true,
	'\u2024': true, '\u2025': true, '\u2026': true, '\uFE52': true, '\u3002': true, '\uFF61': true,
	'\u00B7': true, '\u2027': true, '\u0338': true, '\u2E31': true, '\u1735': true, '\u2CFE': true,
}

// ErrUnsafePath is wrapped by the error of a path the gate refuses to
// read (see PathCondition).
var ErrUnsafePath = fmt.Errorf("toolgate: unsafe path")

// normalizePath returns the forms of p the gate compares (see
// PathCondition): p cleaned, then each percent-decoded form cleaned, in
// order, without repeats. An error wrapping ErrUnsafePath says why p
// cannot be read one way.
func normalizePath(p string) ([]string, error) {
	forms := make([]string, 0, 2)
	s := p
	for round := 0; ; round++ {
		if err := pathSafe(s); err != nil {
			if round == 0 {
				return nil, err
			}
			return nil, fmt.Errorf("%w once percent-decoded: %v", ErrUnsafePath, strings.TrimPrefix(err.Error(), ErrUnsafePath.Error()+": "))
		}
		if !strings.HasPrefix(s, "/") {
			return nil, fmt.Errorf("%w: %s is not absolute", ErrUnsafePath, quotePath(s))
		}
		c := path.Clean(s)
		if len(forms) == 0 || forms[len(forms)-1] != c {
			forms = append(forms, c)
		}
		if !strings.Contains(s, "%") {
			return forms, nil
		}
		if round == 8 {
			return nil, fmt.Errorf("%w: percent-encoded more than 8 times", ErrUnsafePath)
		}
		d, ok := percentDecode(s)
		if !ok {
			return nil, fmt.Errorf("%w: %s has a malformed percent escape", ErrUnsafePath, quotePath(s))
		}
		s = d
	}
}

// pathSafe reports a character the gate refuses in a path.
func pathSafe(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: not valid UTF-8", ErrUnsafePath)
	}
	for i, r := range s {
		why := ""
		switch {
		case r == 0:
			why = "NUL"
		case unicode.IsControl(r):
			why = "a control character"
		case r == '\\':
			why = "a backslash"
		case unicode.Is(unicode.Cf, r):
			why = "a format character"
		case unicode.Is(unicode.M, r):
			why = "a combining mark"
		case r >= 0xFF00 && r <= 0xFFEF:
			why = "a fullwidth form"
		case pathLookAlikes[r], r == '\u2028', r == '\u2029':
			why = "a look-alike of a separator or a dot"
		}
		if why != "" {
			return fmt.Errorf("%w: %s at byte %d", ErrUnsafePath, why, i)
		}
	}
	return nil
}

func quotePath(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return fmt.Sprintf("%+q", strings.ToValidUTF8(s, "\uFFFD"))
}

// percentDecode decodes every %XX of s; false on a malformed escape.
func percentDecode(s string) (string, bool) {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", false
		}
		b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
		i += 2
	}
	return b.String(), true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// pathUnder reports whether the clean absolute path p is root or lies
// beneath it (root clean and absolute too).
func pathUnder(p, root string, fold bool) bool {
	if root == "/" {
		return true
	}
	if !fold {
		return p == root || len(p) > len(root) && p[len(root)] == '/' && p[:len(root)] == root
	}
	// Folding can change byte lengths: compare element by element.
	pe, re := strings.Split(p, "/"), strings.Split(root, "/")
	if len(pe) < len(re) {
		return false
	}
	for i := range re {
		if !strings.EqualFold(pe[i], re[i]) {
			return false
		}
	}
	return true
}

// pathVerdict is the answer of a PathCondition for one value.
type pathVerdict uint8

const (
	pathOutside pathVerdict = iota // the condition does not hold
	pathInside                     // it holds
	pathUnsafe                     // the path cannot be read one way: refuse
)

// check decides the condition for the path p, whose normalizePath is
// forms, err, against clean roots.
func (pc PathCondition) check(p string, forms []string, err error) (pathVerdict, string) {
	if err != nil {
		return pathUnsafe, strings.TrimPrefix(err.Error(), "toolgate: ")
	}
	var first bool
	for i, f := range forms {
		in := false
		for _, root := range pc.Under {
			if pathUnder(f, root, pc.CaseInsensitive) {
				in = true
				break
			}
		}
		if i == 0 {
			first = in
		} else if in != first {
			return pathUnsafe, fmt.Sprintf("unsafe path: %s reads %s once percent-decoded", quotePath(p), quotePath(f))
		}
	}
	if first {
		return pathInside, ""
	}
	return pathOutside, ""
}

// checkRoot reports why root cannot be a directory of Under.
func checkRoot(root string) error {
	if err := pathSafe(root); err != nil {
		return err
	}
	if !strings.HasPrefix(root, "/") {
		return fmt.Errorf("%s is not absolute", quotePath(root))
	}
	if strings.Contains(root, "%") {
		return fmt.Errorf("%s has a percent sign; write the directory's name as it is", quotePath(root))
	}
	// A root is taken as written: "/srv/data/../etc" is not silently
	// read as "/srv/etc", nor "/srv/data/" as "/srv/data".
	if c := path.Clean(root); c != root {
		return fmt.Errorf("%s is not a clean path (\"..\", \".\", \"//\" or a trailing \"/\"): write it as %s", quotePath(root), quotePath(c))
	}
	return nil
}
