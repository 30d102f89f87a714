package gorun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Package is one package the patterns match, as go list describes it.
type Package struct {
	ImportPath   string
	Dir          string
	TestGoFiles  []string
	XTestGoFiles []string
	Error        *struct{ Err string }
}

// HasTests reports whether the package has test files: go test says "no
// test files" of the others, and they are no unit.
func (p Package) HasTests() bool { return len(p.TestGoFiles)+len(p.XTestGoFiles) > 0 }

// ErrNoPackages: the patterns match no package with tests.
var ErrNoPackages = errors.New("no packages with tests")

// List expands the patterns with go list (in dir, with the build flags) and
// returns the packages that have test files, in go list's order. A pattern
// that matches nothing, or a package go list cannot load at all, is an
// error that names it; a package whose tests do not compile is listed, and
// fails as a unit.
func List(ctx context.Context, goTool, dir string, a Args) ([]Package, error) {
	args := append([]string{"list", "-e", "-json=ImportPath,Dir,TestGoFiles,XTestGoFiles,Error"}, a.Build...)
	args = append(args, "--")
	args = append(args, a.Patterns...)
	cmd := exec.CommandContext(ctx, goTool, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list %s: %v: %s", strings.Join(a.Patterns, " "), err, oneLine(stderr.String()))
	}
	if msg := noMatch(stderr.String()); msg != "" {
		return nil, fmt.Errorf("%w: %s", ErrNoPackages, msg)
	}
	var all, out []Package
	dec := json.NewDecoder(&stdout)
	for {
		var p Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list: reading its output: %v", err)
		}
		all = append(all, p)
	}
	for _, p := range all {
		switch {
		case p.Error != nil && !p.HasTests():
			return nil, fmt.Errorf("go list %s: %s", p.ImportPath, oneLine(p.Error.Err))
		case p.HasTests():
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s matched %d package(s), none with test files", ErrNoPackages, strings.Join(a.Patterns, " "), len(all))
	}
	return out, nil
}

// noMatch is go list's warning that a pattern matched no packages, which
// it prints and exits 0 on.
func noMatch(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "matched no packages") {
			return strings.TrimSpace(strings.TrimPrefix(line, "go: "))
		}
	}
	return ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
