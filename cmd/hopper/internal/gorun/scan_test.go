package gorun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScanTests(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a_test.go": "package a\nimport tt \"testing\"\nfunc TestOne(t *tt.T) {}\nfunc Testlower(t *tt.T) {}\nfunc TestPar(x *tt.T) { x.Parallel() }\nfunc TestSubPar(t *tt.T) { t.Run(\"s\", func(t *tt.T) { t.Parallel() }) }\nfunc BenchmarkB(b *tt.B) {}\nfunc TestHelper(t *tt.T, n int) {}\n",
		"b_test.go": "package a_test\nimport \"testing\"\nfunc Test(t *testing.T) {}\nfunc TestMain(m *testing.M) { m.Run() }\nfunc Test_Ü(t *testing.T) {}\nfunc FuzzF(f *testing.F) {}\nfunc Fuzzy(f *testing.F) {}\nfunc TestF(f *testing.F) {}\n",
		"c_test.go": "package a_test\nimport \"fmt\"\nfunc ExampleRuns() {\n\tfmt.Println(1)\n\t// Output: 1\n}\nfunc ExampleCompiledOnly() {\n\tfmt.Println(1)\n}\n",
	}
	for n, s := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644))
	}
	got, err := ScanTests(Package{Dir: dir, TestGoFiles: []string{"a_test.go"}, XTestGoFiles: []string{"b_test.go", "c_test.go"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"TestOne", "TestPar", "TestSubPar", "Test", "Test_Ü", "FuzzF", "ExampleRuns"}, got.Names,
		"tests, fuzz targets, examples with output: what -test.run selects")
	assert.True(t, got.Main)
	assert.Equal(t, []string{"TestPar"}, got.Parallel, "a subtest's t.Parallel is the subtest's")
}

func TestBinaryName(t *testing.T) {
	assert.Equal(t, "b", binaryName("m/a/b"))
	assert.Equal(t, "m", binaryName("example.com/m/v2"))
	assert.Equal(t, "v", binaryName("m/v"))
	assert.Equal(t, "fmt", binaryName("fmt"))
}

func TestBuildOutputByPackage(t *testing.T) {
	ev := `{"ImportPath":"m/c [m/c.test]","Action":"build-output","Output":"# m/c [m/c.test]\n"}
{"ImportPath":"m/c_test [m/c.test]","Action":"build-output","Output":"c_test.go:3: x\n"}
{"ImportPath":"m/c [m/c.test]","Action":"build-fail"}
{"ImportPath":"m/d","Action":"build-output","Output":"d.go:1: y\n"}
`
	assert.Equal(t, map[string]string{"m/c": "# m/c [m/c.test]\nc_test.go:3: x\n", "m/d": "d.go:1: y\n"}, buildOutput([]byte(ev)))
}
