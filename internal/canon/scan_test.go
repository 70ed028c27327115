package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
)

// scanTokens reads one JSON text with a Scanner and returns its tokens in
// encoding/json's Token form (json.Delim, string, json.Number, bool,
// nil), keys included; it finds no duplicate keys, which are not the
// Scanner's to find.
func scanTokens(in []byte) ([]any, error) {
	var s Scanner
	s.Reset(in, 0, 0)
	var toks []any
	var value func() error
	value = func() error {
		switch c := s.Peek(); {
		case c == '{' || c == '[':
			closer := c + 2
			toks = append(toks, json.Delim(c))
			empty, err := s.Open()
			if err != nil {
				return err
			}
			for more := !empty; more; {
				if c == '{' {
					key, _, _, err := s.Key()
					if err != nil {
						return err
					}
					toks = append(toks, string(key))
				}
				if err := value(); err != nil {
					return err
				}
				if more, err = s.Next(closer); err != nil {
					return err
				}
			}
			toks = append(toks, json.Delim(closer))
		case c == '"':
			str, _, err := s.ReadString()
			if err != nil {
				return err
			}
			toks = append(toks, string(str))
		case c == '-' || c >= '0' && c <= '9':
			lit, _, err := s.ReadNumber()
			if err != nil {
				return err
			}
			toks = append(toks, json.Number(lit))
		case c == 't':
			toks = append(toks, true)
			return s.ReadLiteral("true")
		case c == 'f':
			toks = append(toks, false)
			return s.ReadLiteral("false")
		case c == 'n':
			toks = append(toks, nil)
			return s.ReadLiteral("null")
		default:
			return s.Unexpected()
		}
		return nil
	}
	if err := value(); err != nil {
		return nil, err
	}
	return toks, s.Finish()
}

func jsonTokens(in []byte) ([]any, error) {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var toks []any
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return toks, nil
		}
		if err != nil {
			return nil, err
		}
		toks = append(toks, tok)
	}
}

// FuzzScannerReadsAsEncodingJSON: what the Scanner accepts, encoding/json
// accepts and reads as the same tokens (strings unescaped alike, number
// literals as written); what it refuses as a grammar error
// (ErrSyntax), encoding/json refuses too. Its other refusals are the
// strict rules encoding/json lets pass (bad UTF-8, lone surrogates,
// rounded integers, doubles out of range, depth).
func FuzzScannerReadsAsEncodingJSON(f *testing.F) {
	for _, s := range canonicalCheckSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{` {"a\u00e9\ud83d\ude00\/\b\f\n\r\t\"\\" : [ 1 , -2.5e-3 , "x" ] } `, `"\u00"`, `"\x"`, `[1 2]`, `{"a" 1}`,
		`{"a":1 "b":2}`, `[`, `{`, `{"a":`, `"abc`, `"\`, `01`, `1.`, `1e`, `-`, `tru`, `nul`, `[1,]`, "\"\t\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := scanTokens(in)
		want, jerr := jsonTokens(in)
		if err == nil {
			if jerr != nil || !json.Valid(in) {
				t.Fatalf("%q: the Scanner accepts, encoding/json says %v", in, jerr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: the Scanner reads %#v, encoding/json %#v", in, got, want)
			}
			return
		}
		var se *SyntaxError
		if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(in) {
			t.Fatalf("%q: %v is not a *SyntaxError within the text", in, err)
		}
		if errors.Is(err, ErrSyntax) && json.Valid(in) {
			t.Fatalf("%q: the Scanner says %v, encoding/json accepts it", in, err)
		}
	})
}
