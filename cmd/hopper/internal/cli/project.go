package cli

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// projectOf names the project run in dir, for the suite's identity under
// which its timings are kept (docs/cli.md#timings): the Go module whose
// go.mod is in dir or above it, else the git repository around dir, by its
// root and its origin remote, else "" (the command and unit type alone).
// A command and a unit type are no identity: two modules both run
// `go test {unit}` over packages.
func projectOf(dir string) string {
	if module := goModule(dir); module != "" {
		return "go module " + module
	}
	if root, remote := gitRepository(dir); root != "" {
		if remote == "" {
			return "git repository " + root
		}
		return "git repository " + root + " (" + remote + ")"
	}
	return ""
}

// goModule is the module path of the nearest go.mod at or above dir.
func goModule(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if f, err := os.Open(filepath.Join(d, "go.mod")); err == nil {
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
					return strings.Trim(strings.TrimSpace(rest), `"`)
				}
			}
			return ""
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// gitRepository asks git for the root of the repository around dir and its
// origin remote; "" when dir is in none, or git is not installed.
func gitRepository(dir string) (root, remote string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", ""
	}
	root = strings.TrimSpace(string(out))
	out, _ = exec.CommandContext(ctx, "git", "-C", dir, "config", "--get", "remote.origin.url").Output()
	return root, redact(strings.TrimSpace(string(out)))
}

// workingProject is the project of the working directory, where the
// units' command runs.
func workingProject() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	return projectOf(dir)
}
