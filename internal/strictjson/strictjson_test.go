package strictjson_test

//lint:file-ignore SA5008 internal/strictjson reads these structs: its tag option "optional" (a member that may be absent) is one staticcheck does not know, and strictjson refuses an unknown option itself

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
)

type inner struct {
	N int64  `json:"n"`
	S string `json:"s,omitempty"`
}

type doc struct {
	Name  string          `json:"name"`
	Count uint32          `json:"count"`
	Ratio float64         `json:"ratio,optional"`
	On    bool            `json:"on,optional"`
	Items []inner         `json:"items,optional"`
	Ptr   *inner          `json:"ptr,optional"`
	Map   map[string]int  `json:"map,optional"`
	Any   any             `json:"any,optional"`
	Num   json.Number     `json:"num,optional"`
	Raw   json.RawMessage `json:"raw,optional"`
	Up    upper           `json:"up,optional"`
	Embedded
}

type Embedded struct {
	Flat string `json:"flat,optional"`
}

// upper reads itself: a string, upper-cased; "bad" is refused.
type upper string

func (u *upper) UnmarshalStrict(d *strictjson.Decoder) error {
	s, err := d.ReadString()
	if err != nil {
		return err
	}
	if s == "bad" {
		return d.Errorf("enum", "not a good word")
	}
	*u = upper(strings.ToUpper(s))
	return nil
}

func TestUnmarshalReadsTaggedStructs(t *testing.T) {
	var d doc
	err := strictjson.Unmarshal([]byte(` {"name":"a\u00e9","count":7,"ratio":1.5,"on":true,"items":[{"n":-3},{"n":1,"s":"x"}],
		"ptr":{"n":2},"map":{"k":1},"any":{"a":[1.0,null,"s"]},"num":1e3,"raw":[1, 2],"up":"hi","flat":"f"} `), &d)
	require.NoError(t, err)
	assert.Equal(t, doc{Name: "aé", Count: 7, Ratio: 1.5, On: true, Items: []inner{{N: -3}, {N: 1, S: "x"}},
		Ptr: &inner{N: 2}, Map: map[string]int{"k": 1}, Any: map[string]any{"a": []any{json.Number("1.0"), nil, "s"}},
		Num: "1e3", Raw: json.RawMessage(`[1, 2]`), Up: "HI", Embedded: Embedded{Flat: "f"}}, d)
}

// TestUnmarshalReportsEachProblemOnce: every problem of a strict text is
// reported once, with its pointer, rule and the one wording, in document
// order; reading goes on past each.
func TestUnmarshalReportsEachProblemOnce(t *testing.T) {
	var d doc
	err := strictjson.Unmarshal([]byte(`{"name":1,"items":[{"n":1.0},{"n":"x","s":null}],"a/b":0,"ptr":null,"up":"bad","map":{"k":9007199254740992}}`), &d)
	var se *strictjson.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, []violation.Violation{
		{Path: "/name", Rule: violation.RuleType, Message: "want a string, got a number"},
		{Path: "/items/0/n", Rule: violation.RuleType, Message: "want an integer that fits int64, got 1.0"},
		{Path: "/items/1/n", Rule: violation.RuleType, Message: "want an integer, got a string"},
		{Path: "/items/1/s", Rule: violation.RuleType, Message: "want a string, got null"},
		{Path: "/a~1b", Rule: violation.RuleUnknownField, Message: "unknown member"},
		{Path: "/up", Rule: "enum", Message: "not a good word"},
		{Path: "/count", Rule: violation.RuleRequired, Message: "missing"},
	}, se.Violations())
	assert.ErrorIs(t, err, strictjson.ErrType)
	assert.ErrorIs(t, err, strictjson.ErrUnknown)
	assert.ErrorIs(t, err, strictjson.ErrMissing)
	assert.Nil(t, d.Ptr)
	assert.Equal(t, map[string]int{"k": 9007199254740992}, d.Map)
}

// TestUnmarshalRefusesWhatCanonRefuses: a text canonical JSON refuses is
// one syntax (or duplicate_key) problem wrapping canon's sentinel.
func TestUnmarshalRefusesWhatCanonRefuses(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want error
		rule string
	}{
		{`{"name":"a","name":"b","count":1}`, canon.ErrDuplicateKey, violation.RuleDuplicateKey},
		{`{"name":"a","na\u006de":"b","count":1}`, canon.ErrDuplicateKey, violation.RuleDuplicateKey},
		{`{"name":"a","count":1,"x":1,"x":2}`, canon.ErrDuplicateKey, violation.RuleDuplicateKey},
		{`{"name":"a","count":1,"any":{"x":1,"\u0078":2}}`, canon.ErrDuplicateKey, violation.RuleDuplicateKey},
		{"{\"name\":\"\xff\",\"count\":1}", canon.ErrInvalidUTF8, violation.RuleSyntax},
		{`{"name":"\ud800","count":1}`, canon.ErrLoneSurrogate, violation.RuleSyntax},
		{`{"name":"a","count":9007199254740993}`, canon.ErrUnsafeInteger, violation.RuleSyntax},
		{`{"name":"a","count":1e400}`, canon.ErrNonFinite, violation.RuleSyntax},
		{`{"name":"a","count":1} x`, canon.ErrSyntax, violation.RuleSyntax},
		{`{"name":"a","count":01}`, canon.ErrSyntax, violation.RuleSyntax},
		{``, canon.ErrSyntax, violation.RuleSyntax},
		{`{"name":"a","count":1,"any":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`, canon.ErrTooDeep, violation.RuleSyntax},
	} {
		var d doc
		err := strictjson.Unmarshal([]byte(tc.in), &d)
		require.ErrorIs(t, err, tc.want, tc.in)
		var se *strictjson.Error
		require.ErrorAs(t, err, &se)
		require.Len(t, se.Violations(), 1, tc.in)
		assert.Equal(t, tc.rule, se.Violations()[0].Rule, tc.in)
		var syn *canon.SyntaxError
		assert.ErrorAs(t, err, &syn, tc.in)
	}
}

func TestUnmarshalOptions(t *testing.T) {
	var d doc
	require.NoError(t, strictjson.Options{AllowUnknown: true}.Unmarshal([]byte(`{"name":"a","count":1,"x":{"y":[1]}}`), &d))
	err := strictjson.Options{AllowUnknown: true}.Unmarshal([]byte(`{"name":"a","count":1,"x":{"y":"\ud800"}}`), &d)
	require.ErrorIs(t, err, canon.ErrLoneSurrogate, "an unknown member is still read strictly")
	err = strictjson.Options{MaxDepth: 2}.Unmarshal([]byte(`{"name":"a","count":1,"items":[{"n":1}]}`), &d)
	require.ErrorIs(t, err, canon.ErrTooDeep)
	// Member names match exactly, not as encoding/json's case-insensitive
	// match would.
	err = strictjson.Unmarshal([]byte(`{"Name":"a","count":1}`), &d)
	require.ErrorIs(t, err, strictjson.ErrUnknown)
	require.Error(t, strictjson.Unmarshal([]byte(`{}`), d), "not a pointer")
}

// FuzzUnmarshalAgreesWithCanon: read into any, Unmarshal accepts exactly
// the texts canon.Decode accepts, and reads the same tree.
func FuzzUnmarshalAgreesWithCanon(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x",null,true]}`, `{"a":1,"\u0061":2}`, `"\ud83d\ude00"`, `9007199254740993`,
		`1152921504606847000`, `[1e400]`, `{"b":{}} `, `[` + strings.Repeat(`[`, 520), "\"\xed\xa0\x80\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := canon.Decode(data)
		var got any
		err := strictjson.Unmarshal(data, &got)
		if (wantErr == nil) != (err == nil) {
			t.Fatalf("%q: canon %v, strictjson %v", data, wantErr, err)
		}
		if err == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("%q: canon %#v, strictjson %#v", data, want, got)
		}
		var se *strictjson.Error
		if err != nil && (!errors.As(err, &se) || len(se.Violations()) != 1) {
			t.Fatalf("%q: %v is not one problem", data, err)
		}
		// Into a struct: never a panic, and nothing canon refuses.
		var d doc
		if err := strictjson.Unmarshal(data, &d); err == nil && wantErr != nil {
			t.Fatalf("%q: accepted into a struct, canon says %v", data, wantErr)
		}
	})
}
