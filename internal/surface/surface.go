// Package surface counts a package's exported identifiers for the
// surface tests of kernel, kernel/toolgate, kernel/toolgate/gatelog and
// trace: its exported top-level names plus the exported methods of its
// exported types (fields are not counted), listed one "Name" or
// "Type.Method" a line in a golden file, so that every addition or
// removal shows up as a diff of that file, and capped, so that growth is
// a decision.
package surface

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

var update = flag.Bool("update-surface", false, "rewrite the surface tests' testdata/exported.txt")

// Check fails t unless the exported identifiers of the package in dir
// are exactly those listed in golden, and at most max of them. After an
// intended change, run the test with -update-surface: golden is
// rewritten and only the cap is checked.
func Check(t testing.TB, dir, golden string, max int) {
	t.Helper()
	names := exported(t, dir)
	got := strings.Join(names, "\n") + "\n"
	if *update {
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
	if len(names) > max {
		t.Errorf("%d exported identifiers, at most %d", len(names), max)
	}
}

// exported lists the exported identifiers of the package in dir, one
// "Name" or "Type.Method" a line, sorted.
func exported(t testing.TB, dir string) []string {
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
