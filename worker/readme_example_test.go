package worker_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeSnippetIsTheExample: the README's library snippet is Example's
// body, the server's address aside, so that it runs as the tests run it:
// with a build id of its own when no CI variable is set (issue 43: the
// snippet failed on a laptop with "build id is empty").
func TestReadmeSnippetIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "## The library in one screen")
	_, block, _ := strings.Cut(section, "```go\n")
	snippet, _, _ := strings.Cut(block, "```")

	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(src), "func Example() {\n")
	body, _, _ = strings.Cut(body, "\t// Unordered output:")
	var lines []string
	for _, line := range strings.Split(body, "\n") {
		lines = append(lines, strings.TrimPrefix(line, "\t"))
	}
	example := strings.ReplaceAll(strings.Join(lines, "\n"), "redisAddr", `"127.0.0.1:6379"`)
	if strings.TrimSpace(snippet) != strings.TrimSpace(example) {
		t.Errorf("the README's snippet is not Example's body:\n--- README\n%s\n--- Example\n%s", snippet, example)
	}
	if !strings.Contains(snippet, `if buildID == "" {`) {
		t.Error("the snippet has no build id when CI_PIPELINE_ID is unset")
	}
}
