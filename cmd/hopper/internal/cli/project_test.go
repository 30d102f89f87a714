package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hopper-queue/hopper/worker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTimingsKeyedByProject: two modules running the same command over
// the same unit type are two suites, with two timings stores; a git
// repository without go.mod is named by its root and remote (issue 43:
// unrelated projects shared one timings file and one Redis key).
func TestTimingsKeyedByProject(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(a, "go.mod"), []byte("module example.com/a\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(b, "go.mod"), []byte("// b\nmodule \"example.com/b\"\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(a, "internal", "x"), 0o755))
	assert.Equal(t, "go module example.com/a", projectOf(filepath.Join(a, "internal", "x")))
	assert.Equal(t, "go module example.com/b", projectOf(b))

	suite := func(dir string) worker.Suite {
		return worker.Suite{UnitType: "package", Command: "go test {unit}", Project: projectOf(dir)}
	}
	assert.NotEqual(t, suite(a).ID(), suite(b).ID())
	assert.Equal(t, suite(a).ID(), suite(filepath.Join(a, "internal")).ID())

	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"remote", "add", "origin", "https://ci:token@git.example.com/team/app.git"}} {
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	root, err := filepath.EvalSymlinks(repo)
	require.NoError(t, err)
	assert.Equal(t, "git repository "+root+" (https://ci:xxxxx@git.example.com/team/app.git)", projectOf(repo))
	assert.NotEqual(t, suite(repo).ID(), suite(a).ID())

	assert.Equal(t, "", projectOf(t.TempDir()), "a directory in no module and no repository")
}
