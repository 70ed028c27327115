// Guarantee checked here: the decoders never panic on any input, report
// well-formed sorted violations, and a document they accept re-encodes to
// one they accept, under every option: FuzzDecode.

package contracts

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/verity-go/verity/internal/violation"
)

// FuzzDecode feeds arbitrary bytes to every decoder. None may panic; each
// returns either no error or a *ValidationError whose violations are
// sorted, have JSON Pointer paths and named rules; a document that
// validates re-encodes to a document that validates. With SpecOnly no
// extension is reported, and a document valid by every rule stays valid.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*", "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		k, err := ParseKind(filepath.Base(filepath.Dir(p)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(slices.Index(allKinds, k)), b)
	}
	f.Add(uint8(0), []byte(`{"schema_version":"1.0.0","explanation_json":"{\"a\":1}"}`))
	f.Add(uint8(3), []byte(`[]`))
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		kind := allKinds[int(k)%len(allKinds)]
		v, err := decodeAny(kind, data)
		spec, serr := Check(kind, data, SpecOnly())
		if serr != nil || (err == nil && len(spec) > 0) {
			t.Fatalf("%s: SpecOnly: %v %v (default: %v)", kind, serr, spec, err)
		}
		for _, v := range spec {
			if isExtension(v.Rule) {
				t.Fatalf("%s: SpecOnly reports extension %+v", kind, v)
			}
		}
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("%s: unexpected error %v", kind, err)
			}
			if len(ve.Violations) == 0 || !slices.IsSortedFunc(ve.Violations, violation.Compare) {
				t.Fatalf("%s: violations empty or unsorted: %v", kind, ve.Violations)
			}
			for _, v := range ve.Violations {
				if v.Rule == "" || v.Message == "" || (v.Path != "" && v.Path[0] != '/') {
					t.Fatalf("%s: malformed violation %+v", kind, v)
				}
			}
			return
		}
		again, err := Marshal(v)
		if err != nil {
			t.Fatalf("%s: valid document does not re-encode: %v", kind, err)
		}
		if vs, _ := Check(kind, again); len(vs) > 0 {
			t.Fatalf("%s: re-encoded document is invalid: %v\n%s", kind, vs, again)
		}
	})
}
