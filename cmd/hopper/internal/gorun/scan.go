package gorun

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tests is what a package's test files say of its top-level tests, read
// from the source: no binary needs to be built to list them.
type Tests struct {
	// Names are what -test.run selects at the top level, in the order go
	// test runs them: the tests, the fuzz targets (their seed corpus runs
	// as a test), and the examples that have an output comment (the others
	// are compiled, not run).
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
	var fuzz, examples []string
	fset := token.NewFileSet()
	for _, name := range append(append([]string{}, p.TestGoFiles...), p.XTestGoFiles...) {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return Tests{}, err
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil {
				continue
			}
			name := fn.Name.Name
			switch param, kind := testParam(fn); {
			case name == "TestMain":
				t.Main = true
			case kind == "T" && isTestName(name, "Test"):
				t.Names = append(t.Names, name)
				if callsParallel(fn.Body, param) {
					t.Parallel = append(t.Parallel, name)
				}
			case kind == "F" && isTestName(name, "Fuzz"):
				fuzz = append(fuzz, name)
			}
		}
		for _, ex := range doc.Examples(f) {
			if ex.Output != "" || ex.EmptyOutput {
				examples = append(examples, "Example"+ex.Name)
			}
		}
	}
	t.Names = append(append(t.Names, fuzz...), examples...)
	return t, nil
}

// isTestName is go test's rule: the prefix, then nothing or a character
// that is not a lower-case letter.
func isTestName(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return !unicode.IsLower(r)
}

// testParam is the name of fn's one parameter and its kind, "T" for a
// *testing.T and "F" for a *testing.F (as the test file spells the
// package: testing, or a rename); kind "" for anything else.
func testParam(fn *ast.FuncDecl) (name, kind string) {
	if fn.Type.Params == nil || len(fn.Type.Params.List) != 1 || fn.Type.Results != nil {
		return "", ""
	}
	field := fn.Type.Params.List[0]
	star, ok := field.Type.(*ast.StarExpr)
	if !ok {
		return "", ""
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "T" && sel.Sel.Name != "F" {
		return "", ""
	}
	if len(field.Names) != 1 {
		return "_", sel.Sel.Name
	}
	return field.Names[0].Name, sel.Sel.Name
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
