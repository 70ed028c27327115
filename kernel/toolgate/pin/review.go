package pin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
)

// LongDescription is the most characters (runes) a tool's description
// may have without a warning: 2048, well above what a tool needs to say
// what it does (most say it in under 500) and below the pages of hidden
// instructions a poisoned description carries.
const LongDescription = 2048

// The codes of a Warning.
const (
	WarnInvisible   = "invisible"   // TAG, zero-width, format or control characters
	WarnBidi        = "bidi"        // bidirectional controls
	WarnConfusable  = "confusable"  // Cyrillic or Greek look-alike letters
	WarnLong        = "long"        // a description over LongDescription characters
	WarnInstruction = "instruction" // a phrase that instructs the model
	WarnOtherTool   = "other_tool"  // a mention of another tool of the server
)

// Warning is something suspicious in a tool's definition, found at pin
// time: shown to whoever reviews it, never a refusal. Pointer is the
// JSON Pointer of the string in the definition (a member's name when it
// is the name that is suspicious); Message says what, with the
// characters as Visible writes them.
type Warning struct {
	Tool, Code, Pointer, Message string
}

func (w Warning) String() string {
	return fmt.Sprintf("%s %s: %s: %s", Visible(w.Tool), Visible(w.Pointer), w.Code, w.Message)
}

// instructionPhrases are the phrases that read as instructions to the
// model rather than a description of the tool (compared in lower case,
// whitespace and invisible characters removed between words).
var instructionPhrases = regexp.MustCompile(`(?i)(ignore (all |any )?(the )?(previous|prior|above|earlier)|disregard (all |any )?(the )?(previous|prior|above|earlier|other)|before using (any|this|the|another) (other )?tool|before (calling|you call|using) (any|another)|instead of (using|calling) |<\s*/?\s*(important|system|instructions?|secret)\s*>|do not (tell|inform|mention|reveal|show)|don'?t (tell|inform|mention|reveal|show)|without (telling|informing|asking) the user|the user (must not|should not) (know|see)|you must (always|first|never)|always (call|use|run) |system prompt|new instructions|override (the |your )?(instructions|rules)|(\.ssh|id_rsa|\.env\b|mcp\.json|credentials|api[_ ]?key))`)

// Warnings returns the warnings of each tool of a listing, by tool and
// then by pointer: invisible, bidirectional and look-alike characters in
// any string or member name, a description longer than LongDescription,
// phrases that instruct the model, and mentions of the listing's other
// tools' names. A definition that is not JSON has no warnings (it cannot
// be pinned: HashDefinition refuses it).
func Warnings(tools []Tool) []Warning {
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	var out []Warning
	for _, t := range tools {
		out = append(out, warnings(t, names)...)
	}
	return out
}

// warnings are the warnings of one tool; peers are the listing's names.
func warnings(t Tool, peers []string) []Warning {
	tree, err := canon.Decode(t.Definition)
	if err != nil {
		return nil
	}
	var out []Warning
	add := func(ptr, code, format string, args ...any) {
		out = append(out, Warning{Tool: t.Name, Code: code, Pointer: ptr, Message: fmt.Sprintf(format, args...)})
	}
	var others []string
	for _, p := range peers {
		if p != t.Name && utf8.RuneCountInString(p) >= 3 {
			others = append(others, p)
		}
	}
	var walk func(ptr string, v any)
	text := func(ptr, s string, isKey bool) {
		var inv, bid, look []string
		look1 := lookalikes(s)
		for i, r := range s {
			switch {
			case look1[i]:
				look = append(look, escape(r))
			case bidi(r):
				bid = append(bid, escape(r))
			case hidden(r) && r != '\t' && r != '\n' && r != '\r':
				inv = append(inv, escape(r))
			}
		}
		if len(inv) > 0 {
			add(ptr, WarnInvisible, "%d invisible characters: %s", len(inv), firsts(inv))
		}
		if len(bid) > 0 {
			add(ptr, WarnBidi, "%d bidirectional controls: %s", len(bid), firsts(bid))
		}
		if len(look) > 0 {
			add(ptr, WarnConfusable, "%d look-alike letters: %s", len(look), firsts(look))
		}
		if isKey {
			return
		}
		plain := normalize(s)
		if m := instructionPhrases.FindString(plain); m != "" {
			add(ptr, WarnInstruction, "reads as an instruction to the model: %q", m)
		}
		for _, o := range others {
			if mentions(plain, strings.ToLower(o)) {
				add(ptr, WarnOtherTool, "mentions another tool of the server, %q", Visible(o))
			}
		}
	}
	walk = func(ptr string, v any) {
		switch v := v.(type) {
		case string:
			text(ptr, v, false)
		case []any:
			for i, x := range v {
				walk(fmt.Sprintf("%s/%d", ptr, i), x)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				text(ptr+"/"+token(k), k, true)
				walk(ptr+"/"+token(k), v[k])
			}
		}
	}
	walk("", tree)
	if obj, ok := tree.(map[string]any); ok {
		if d, ok := obj["description"].(string); ok {
			if n := utf8.RuneCountInString(d); n > LongDescription {
				add("/description", WarnLong, "%d characters, more than %d", n, LongDescription)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Warning) int { return strings.Compare(a.Pointer, b.Pointer) })
	return out
}

// firsts lists the first few escapes of a warning.
func firsts(esc []string) string {
	const most = 3
	if len(esc) <= most {
		return strings.Join(esc, " ")
	}
	return strings.Join(esc[:most], " ") + fmt.Sprintf(" and %d more", len(esc)-most)
}

// normalize lowers s, drops its hidden characters and folds runs of
// white space to one space: what the phrase and name checks read.
func normalize(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case hidden(r) && !unicode.IsSpace(r):
		case unicode.IsSpace(r):
			space = true
		default:
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// mentions reports whether s holds name as a whole word.
func mentions(s, name string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], name)
		if j < 0 {
			return false
		}
		at := i + j
		end := at + len(name)
		before, _ := utf8.DecodeLastRuneInString(s[:at])
		after, _ := utf8.DecodeRuneInString(s[end:])
		if (at == 0 || !wordRune(before)) && (end == len(s) || !wordRune(after)) {
			return true
		}
		i = at + 1
	}
}

func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-' }

// Line is one line of a Review's diff: Op is ' ' (both), '-' (the old
// definition only) or '+' (the new one only); Text the line, its
// invisible and look-alike characters as escapes (Visible).
type Line struct {
	Op   byte
	Text string
	segs []segment
}

// Review is what a person approving a changed tool is shown: its two
// hashes, the line diff of its two definitions (canonical JSON, one
// member per line), and the new definition's warnings.
type Review struct {
	Tool     string
	Old, New string
	Lines    []Line
	Warnings []Warning
}

// maxDiffCells bounds the diff's work (lines of the old times lines of
// the new); beyond it the review shows the old definition removed and
// the new one added whole.
const maxDiffCells = 4 << 20

// Compare returns the review of a tool's definition changing from old to
// new (nil old: a new tool; nil new: a removed one); peers are the names
// of the server's other tools, for the warnings. An old or new
// definition that HashDefinition refuses is an error.
func Compare(old, new []byte, peers []string) (Review, error) {
	var r Review
	var oldLines, newLines []string
	if old != nil {
		name, h, err := HashDefinition(old)
		if err != nil {
			return Review{}, fmt.Errorf("the old definition: %w", err)
		}
		r.Tool, r.Old = name, h
		oldLines = prettyLines(old)
	}
	if new != nil {
		name, h, err := HashDefinition(new)
		if err != nil {
			return Review{}, fmt.Errorf("the new definition: %w", err)
		}
		r.Tool, r.New = name, h
		newLines = prettyLines(new)
		r.Warnings = warnings(Tool{Name: name, Hash: h, Definition: new}, append(slices.Clone(peers), name))
	}
	for _, l := range diffLines(oldLines, newLines) {
		l.segs = segments(l.Text)
		l.Text = Visible(l.Text)
		r.Lines = append(r.Lines, l)
	}
	return r, nil
}

// prettyLines is def's canonical form indented, one member per line.
func prettyLines(def []byte) []string {
	c, err := canon.Transform(def)
	if err != nil {
		return nil
	}
	var b bytes.Buffer
	if err := json.Indent(&b, c, "", "  "); err != nil {
		return nil
	}
	return strings.Split(b.String(), "\n")
}

// diffLines is the longest-common-subsequence line diff of a and b.
func diffLines(a, b []string) []Line {
	if len(a)*len(b) > maxDiffCells {
		out := make([]Line, 0, len(a)+len(b))
		for _, l := range a {
			out = append(out, Line{Op: '-', Text: l})
		}
		for _, l := range b {
			out = append(out, Line{Op: '+', Text: l})
		}
		return out
	}
	// lcs[i][j]: the longest common subsequence of a[i:] and b[j:].
	w := len(b) + 1
	lcs := make([]int32, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	var out []Line
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, Line{Op: ' ', Text: a[i]})
			i++
			j++
		case lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
			out = append(out, Line{Op: '-', Text: a[i]})
			i++
		default:
			out = append(out, Line{Op: '+', Text: b[j]})
			j++
		}
	}
	for ; i < len(a); i++ {
		out = append(out, Line{Op: '-', Text: a[i]})
	}
	for ; j < len(b); j++ {
		out = append(out, Line{Op: '+', Text: b[j]})
	}
	return out
}

// Text renders the review for a terminal: a header with both hashes, the
// diff lines prefixed "- ", "+ " or "  ", then the warnings. Nothing in
// it is a control or invisible character but the line feeds.
func (r Review) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tool %s: pinned %s, listed %s\n", Visible(r.Tool), cmpNone(r.Old), cmpNone(r.New))
	for _, l := range r.Lines {
		b.WriteByte(l.Op)
		b.WriteByte(' ')
		b.WriteString(l.Text)
		b.WriteByte('\n')
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}

// HTML renders the review as an HTML fragment for a page (the approval
// inbox): every text escaped, the diff in a <pre> with removed lines in
// <del> and added ones in <ins>, each escape in a <mark class="hidden-char">,
// the warnings in a <ul class="pin-warnings">. It holds no script, no
// attribute from the definitions and no character a browser would hide.
func (r Review) HTML() string {
	var b strings.Builder
	b.WriteString(`<section class="pin-review"><h3>`)
	fmt.Fprintf(&b, "tool <code>%s</code>: pinned <code>%s</code>, listed <code>%s</code></h3>\n<pre class=\"pin-diff\">",
		html.EscapeString(Visible(r.Tool)), html.EscapeString(cmpNone(r.Old)), html.EscapeString(cmpNone(r.New)))
	for _, l := range r.Lines {
		open, end := "<span>  ", "</span>"
		switch l.Op {
		case '-':
			open, end = "<del>- ", "</del>"
		case '+':
			open, end = "<ins>+ ", "</ins>"
		}
		b.WriteString(open)
		segs := l.segs
		if segs == nil {
			segs = segments(l.Text)
		}
		for _, s := range segs {
			if s.escaped {
				b.WriteString(`<mark class="hidden-char">`)
				b.WriteString(html.EscapeString(s.text))
				b.WriteString(`</mark>`)
			} else {
				b.WriteString(html.EscapeString(s.text))
			}
		}
		b.WriteString(end)
		b.WriteByte('\n')
	}
	b.WriteString("</pre>")
	if len(r.Warnings) > 0 {
		b.WriteString("\n<ul class=\"pin-warnings\">")
		for _, w := range r.Warnings {
			fmt.Fprintf(&b, "<li>%s</li>", html.EscapeString(w.String()))
		}
		b.WriteString("</ul>")
	}
	b.WriteString("</section>\n")
	return b.String()
}
