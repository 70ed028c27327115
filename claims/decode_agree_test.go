package claims

import (
	"fmt"
	"reflect"
	"testing"
)

// FuzzDecodersAgree: each decoder accepts exactly the documents the
// decoder it replaced (decode_old_test.go) accepted, and reads them as
// the same values.
func FuzzDecodersAgree(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(uint8(0), []byte(s))
	}
	f.Add(uint8(5), []byte(`{"actor":"a","clearance":"MODIFY","bundle":{"origin_agent":{"bytes":"/w=="},"claims":[]}}`))
	f.Add(uint8(5), []byte(`{"actor":"a","clearance":"x","bundle":{"origin_agent":{"bytes":"YQ==","x":1},"claims":[{"uncertainty":{"value":"NaN"}}]}}`))
	f.Add(uint8(6), []byte(`{"bundle_id":"b"}`))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		switch which % 7 {
		case 0:
			agree(t, data, DecodeBundle, func(b []byte) (ClaimBundle, error) {
				return oldDecodeWith(b, "", false, (*oldDecoder).bundle)
			})
		case 1:
			agree(t, data, DecodeClaim, func(b []byte) (Claim, error) { return oldDecodeWith(b, "", false, (*oldDecoder).claim) })
		case 2:
			agree(t, data, DecodeEvidencePointer, func(b []byte) (EvidencePointer, error) {
				return oldDecodeWith(b, "", false, (*oldDecoder).evidence)
			})
		case 3:
			agree(t, data, DecodeUncertainty, func(b []byte) (Uncertainty, error) {
				return oldDecodeWith(b, "", false, (*oldDecoder).uncertainty)
			})
		case 4:
			agree(t, data, DecodeApproval, func(b []byte) (Approval, error) {
				return oldDecodeWith(b, "", false, (*oldDecoder).approval)
			})
		case 5:
			agree(t, data, DecodeRecord, func(b []byte) (Record, error) { return oldDecodeWith(b, "", true, (*oldDecoder).record) })
		case 6:
			agree(t, data, decodeRemoval, func(b []byte) (string, error) {
				return oldDecodeWith(b, "", true, func(d *oldDecoder, path string, v any) string {
					m, ok := d.object(path, v, "bundle_id")
					if !ok {
						return ""
					}
					return d.str(m, path, "bundle_id", true)
				})
			})
		}
	})
}

func agree[T any](t *testing.T, data []byte, decode, old func([]byte) (T, error)) {
	t.Helper()
	got, err := decode(data)
	want, oldErr := old(data)
	if (err == nil) != (oldErr == nil) {
		t.Fatalf("%q:\nold: %v\nnew: %v", data, oldErr, err)
	}
	// NaN (record form) is not DeepEqual to itself; its printing is.
	if err == nil && !reflect.DeepEqual(want, got) && fmt.Sprintf("%#v", want) != fmt.Sprintf("%#v", got) {
		t.Fatalf("%q:\nold: %#v\nnew: %#v", data, want, got)
	}
}
