package gorun

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"unicode"
	"unicode/utf8"
)

// Tests is what a package's test files say of its top-level tests, read
// from the source: no binary needs to be built to list them.
type Tests struct {
	// Names are the top-level tests, in the order go test runs them.
	Names []string
	// Main is true when a test file defines TestMain, which may depend on
	// all the tests running in one process.
	Main bool
	// Parallel names the top-level tests that call t.Parallel themselves:
	// they run together with the other parallel tests of the package.
	Parallel []string
}

// ScanTests parses the package's test files. A file that does not parse
// gives an error; the package's compile then says why.
func ScanTests(p Package) (Tests, error) {
	var t Tests
	fset := token.NewFileSet()
	for _, name := range append(append([]string{}, p.TestGoFiles...), p.XTestGoFiles...) {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return Tests{}, err
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil {
				continue
			}
			switch param, ok := testParam(fn); {
			case fn.Name.Name == "TestMain":
				t.Main = true
			case ok && isTestName(fn.Name.Name):
				t.Names = append(t.Names, fn.Name.Name)
				if callsParallel(fn.Body, param) {
					t.Parallel = append(t.Parallel, fn.Name.Name)
				}
			}
		}
	}
	return t, nil
}

// isTestName is go test's rule: Test, then nothing or a character that is
// not a lower-case letter.
func isTestName(name string) bool {
	if len(name) < 4 || name[:4] != "Test" {
		return false
	}
	if len(name) == 4 {
		return true
	}
	r, _ := utf8.DecodeRuneInString(name[4:])
	return !unicode.IsLower(r)
}

// testParam is the name of fn's one parameter when it is a *testing.T (as
// the test file spells the package: testing, or a rename).
func testParam(fn *ast.FuncDecl) (string, bool) {
	if fn.Type.Params == nil || len(fn.Type.Params.List) != 1 || fn.Type.Results != nil {
		return "", false
	}
	field := fn.Type.Params.List[0]
	star, ok := field.Type.(*ast.StarExpr)
	if !ok {
		return "", false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "T" {
		return "", false
	}
	if len(field.Names) != 1 {
		return "_", true
	}
	return field.Names[0].Name, true
}

// callsParallel reports whether body calls param.Parallel() among its own
// statements (not in a subtest's function).
func callsParallel(body *ast.BlockStmt, param string) bool {
	for _, s := range body.List {
		es, ok := s.(*ast.ExprStmt)
		if !ok {
			continue
		}
		call, ok := es.X.(*ast.CallExpr)
		if !ok {
			continue
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Parallel" {
			continue
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == param {
			return true
		}
	}
	return false
}
