// Guarantees checked here: canonical ids parse by the grammar of
// specification 002 (TestParse) and round-trip through their builders
// (TestIDRoundTrip, rapid; FuzzParse); the zero Form is no form
// (TestZeroFormIsNoForm).

package ids

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

var digest = strings.Repeat("ab", 32)

func TestParse(t *testing.T) {
	good := []struct {
		in   string
		want ID
	}{
		{"00f067aa0ba902b7", ID{Form: FormSpan, SpanID: "00f067aa0ba902b7"}},
		{"tool:s1", ID{Form: FormTool, SpanID: "s1"}},
		{"retrieval:s1:0:doc", ID{Form: FormRetrieval, SpanID: "s1", DocumentID: "doc"}},
		{"retrieval:s1:12:s3://bucket/a.md:chunk=7", ID{Form: FormRetrieval, SpanID: "s1", Position: 12, DocumentID: "s3://bucket/a.md", ChunkID: "7"}},
		{"retrieval:s1:3:doc:chunk=a:chunk=b", ID{Form: FormRetrieval, SpanID: "s1", Position: 3, DocumentID: "doc", ChunkID: "a:chunk=b"}},
		{"configdiff:" + digest, ID{Form: FormConfigDiff, SHA256: digest}},
		{"compliance:PII-001:" + digest, ID{Form: FormCompliance, ControlID: "PII-001", SHA256: digest}},
		{"compliance:pci:3.4:" + digest, ID{Form: FormCompliance, ControlID: "pci:3.4", SHA256: digest}},
	}
	for _, c := range good {
		got, err := Parse(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
		assert.Equal(t, c.in, got.String())
	}
	bad := map[string]string{
		"":                                      "empty",
		"tool:":                                 "empty span id",
		"tool:a:b":                              "may not contain ':'",
		"retrieval:s1":                          "needs",
		"retrieval::1:doc":                      "empty span id",
		"retrieval:s1:1":                        "needs",
		"retrieval:s1::doc":                     "empty document position",
		"retrieval:s1:-1:doc":                   "not a non-negative integer",
		"retrieval:s1:+1:doc":                   "not a non-negative integer",
		"retrieval:s1:01:doc":                   "leading zero",
		"retrieval:s1:99999999999999999999:doc": "out of range",
		"retrieval:s1:1:":                       "empty document id",
		"retrieval:s1:1::chunk=c":               "empty document id",
		"retrieval:s1:1:doc:chunk=":             "empty chunk id",
		"configdiff:" + digest[:63]:             "64 lower-case hex",
		"configdiff:" + strings.ToUpper(digest): "64 lower-case hex",
		"compliance:" + digest:                  "needs <control_id>",
		"compliance::" + digest:                 "empty control id",
		"compliance:c1:" + digest + "0":         "64 lower-case hex",
		"span:s1":                               "unknown prefix",
		"tool:s\n1":                             "control character",
		"tool:\xff":                             "invalid UTF-8",
	}
	for in, reason := range bad {
		_, err := Parse(in)
		require.Error(t, err, "%q", in)
		assert.ErrorIs(t, err, ErrInvalid)
		var ie *Error
		require.True(t, errors.As(err, &ie))
		assert.Contains(t, ie.Reason, reason, "%q", in)
	}
}

func TestIDBuilders(t *testing.T) {
	s, err := Tool("s1")
	require.NoError(t, err)
	assert.Equal(t, "tool:s1", s)
	s, err = Retrieval("s1", 3, "kb/a.md", "")
	require.NoError(t, err)
	assert.Equal(t, "retrieval:s1:3:kb/a.md", s)
	s, err = Retrieval("s1", 3, "kb/a.md", "12")
	require.NoError(t, err)
	assert.Equal(t, "retrieval:s1:3:kb/a.md:chunk=12", s)
	s, err = ConfigDiff(ExcerptHash("diff"))
	require.NoError(t, err)
	assert.Equal(t, "configdiff:"+ExcerptHash("diff"), s)
	s, err = Compliance("PII-001", digest)
	require.NoError(t, err)
	assert.Equal(t, "compliance:PII-001:"+digest, s)

	for _, err := range []error{
		func() error { _, err := Tool("a:b"); return err }(),
		func() error { _, err := Tool(""); return err }(),
		func() error { _, err := Retrieval("s1", 0, "a:chunk=b", ""); return err }(),
		func() error { _, err := Retrieval("s1", 0, "", ""); return err }(),
		func() error { _, err := ConfigDiff("xyz"); return err }(),
		func() error { _, err := Compliance("", digest); return err }(),
	} {
		assert.ErrorIs(t, err, ErrInvalid)
	}
}

func TestExcerptHash(t *testing.T) {
	// SHA-256("abc"), FIPS 180-2 appendix B.1.
	assert.Equal(t, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", ExcerptHash("abc"))
}

func genIDPart(allowColon bool) *rapid.Generator[string] {
	alphabet := "abcdef0123456789-_./é"
	if allowColon {
		alphabet += "::="
	}
	return rapid.StringOfN(rapid.RuneFrom([]rune(alphabet)), 1, 12, -1)
}

// TestIDRoundTrip: any id built from valid parts parses back to those parts,
// and any string that parses formats back to itself.
func TestIDRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		span := genIDPart(false).Draw(t, "span")
		doc := genIDPart(true).Filter(func(s string) bool { return !strings.Contains(s, chunkMarker) }).Draw(t, "doc")
		chunk := rapid.OneOf(rapid.Just(""), genIDPart(true)).Draw(t, "chunk")
		pos := rapid.Uint64().Draw(t, "pos")
		control := genIDPart(true).Draw(t, "control")
		sha := ExcerptHash(rapid.String().Draw(t, "text"))
		cases := []ID{
			{Form: FormSpan, SpanID: span},
			{Form: FormTool, SpanID: span},
			{Form: FormRetrieval, SpanID: span, Position: pos, DocumentID: doc, ChunkID: chunk},
			{Form: FormConfigDiff, SHA256: sha},
			{Form: FormCompliance, ControlID: control, SHA256: sha},
		}
		for _, id := range cases {
			s := id.String()
			got, err := Parse(s)
			if err != nil {
				t.Fatalf("Parse(%q): %v", s, err)
			}
			if got != id {
				t.Fatalf("Parse(%q) = %+v, want %+v", s, got, id)
			}
		}
	})
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(
			rapid.StringMatching(`(tool|retrieval|configdiff|compliance|x)?:?[a-f0-9:]{0,8}(:[0-9]{1,3})?(:[a-z:]{0,6})?(:chunk=[a-z:]{0,3})?`),
			rapid.String(),
		).Draw(t, "s")
		id, err := Parse(s)
		if err == nil && id.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, id.String())
		}
	})
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"tool:s1", "retrieval:s1:3:doc:chunk=1", "configdiff:" + digest, "compliance:c:" + digest, "s1", "retrieval:s1:01:d", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		if id.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, id.String())
		}
	})
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("retrieval:b7ad6b7169203331:3:kb/returns-policy.md:chunk=12"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestZeroFormIsNoForm: the zero Form is none of the id forms, and the zero
// ID formats as no id.
func TestZeroFormIsNoForm(t *testing.T) {
	assert.Equal(t, "Form(0)", Form(0).String())
	assert.Equal(t, "", ID{}.String())
}
