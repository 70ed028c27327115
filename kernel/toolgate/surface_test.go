package toolgate_test

import (
	"flag"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxExported bounds the package's exported surface: its exported
// top-level names plus the exported methods of its exported types (fields
// are not counted), counted as kernel's TestExportedSurface counts them.
// It is the surface as it stands: the aim is 110, and what stands
// between (the Gate's methods, the log's entry kinds and payloads, the
// answers, the conditions, the options) is the gate's lifecycle, whose
// rewrite as one state machine decides what it keeps.
const maxExported = 145

var updateSurface = flag.Bool("update-surface", false, "rewrite testdata/exported.txt")

// exported lists the exported identifiers of the package in dir, one
// "Name" or "Type.Method" a line, sorted.
func exported(t *testing.T, dir string) []string {
	t.Helper()
	pkg, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					names = append(names, d.Name.Name)
					continue
				}
				if recv := receiverType(d.Recv.List[0].Type); ast.IsExported(recv) {
					names = append(names, recv+"."+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// TestExportedSurface keeps the package's exported identifiers at most
// maxExported and lists them in testdata/exported.txt, so that every
// addition or removal shows up as a diff of that file. After an intended
// change, run go test -run TestExportedSurface -update-surface.
func TestExportedSurface(t *testing.T) {
	names := exported(t, ".")
	got := strings.Join(names, "\n") + "\n"
	const golden = "testdata/exported.txt"
	if *updateSurface {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		wantNames := strings.Fields(string(want))
		for _, n := range names {
			if !slices.Contains(wantNames, n) {
				t.Errorf("exported but not in %s: %s", golden, n)
			}
		}
		for _, n := range wantNames {
			if !slices.Contains(names, n) {
				t.Errorf("in %s but not exported: %s", golden, n)
			}
		}
		t.Errorf("the exported surface differs from %s; if intended, run go test -run TestExportedSurface -update-surface", golden)
	}
	if len(names) > maxExported {
		t.Errorf("%d exported identifiers, at most %d", len(names), maxExported)
	}
}
