package gorun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Ahead compiles a first chunk of firstChunk packages, so that the first
// binaries are ready soon, then chunks of aheadChunk: enough for one go
// command, which loads the package graph each time, to link several at
// once.
const (
	firstChunk = 2
	aheadChunk = 8
)

// Compiler builds test binaries with go test -c, each package once per
// process, and keeps them in a folder of its own until Close.
type Compiler struct {
	Go    string   // the go command
	Dir   string   // where go runs: the module the patterns are relative to
	Flags []string // build flags

	mu     sync.Mutex
	out    string
	chunks int
	builds map[string]*binary // by import path
}

// binary is one package's compile, done when ready closes.
type binary struct {
	ready  chan struct{}
	path   string // the binary, when it built
	failed string // the compiler's output, when it did not
	err    error  // the go command could not be run
}

// NewCompiler makes the folder the binaries go to.
func NewCompiler(goTool, dir string, flags []string) (*Compiler, error) {
	out, err := os.MkdirTemp("", "hopper-go-")
	if err != nil {
		return nil, err
	}
	return &Compiler{Go: goTool, Dir: dir, Flags: flags, out: out, builds: map[string]*binary{}}, nil
}

// Close removes the binaries.
func (c *Compiler) Close() error { return os.RemoveAll(c.out) }

// Binary returns the test binary of p, compiling it unless an earlier or
// running compile has it. failed is the compiler's output when the tests
// do not compile; err says the go command itself could not run.
func (c *Compiler) Binary(ctx context.Context, p Package) (path, failed string, err error) {
	c.mu.Lock()
	b, ok := c.builds[p.ImportPath]
	if !ok {
		bs := c.claim([]Package{p})
		c.mu.Unlock()
		c.compile(ctx, []Package{p}, bs)
		b = bs[0]
	} else {
		c.mu.Unlock()
	}
	select {
	case <-b.ready:
	case <-ctx.Done():
		return "", "", ctx.Err()
	}
	return b.path, b.failed, b.err
}

// Ahead compiles pkgs in order, a few at a time, skipping those compiled
// or compiling, until all are done or ctx ends: a slot that then takes
// one of them finds its binary ready.
func (c *Compiler) Ahead(ctx context.Context, pkgs []Package) {
	size := firstChunk
	for i := 0; i < len(pkgs) && ctx.Err() == nil; size = aheadChunk {
		var chunk []Package
		bases := map[string]bool{}
		c.mu.Lock()
		for ; i < len(pkgs) && len(chunk) < size; i++ {
			_, done := c.builds[pkgs[i].ImportPath]
			base := binaryName(pkgs[i].ImportPath)
			if done || bases[base] {
				continue // one folder cannot hold two binaries of one name
			}
			bases[base] = true
			chunk = append(chunk, pkgs[i])
		}
		bs := c.claim(chunk)
		c.mu.Unlock()
		if len(chunk) > 0 {
			c.compile(ctx, chunk, bs)
		}
	}
}

// claim registers the compiles of pkgs; c.mu is held.
func (c *Compiler) claim(pkgs []Package) []*binary {
	bs := make([]*binary, len(pkgs))
	for i, p := range pkgs {
		bs[i] = &binary{ready: make(chan struct{})}
		c.builds[p.ImportPath] = bs[i]
	}
	return bs
}

// compile runs one go test -c for pkgs into a folder of its own and
// settles each one's binary: built, or failed with its own build output
// (go test -json says whose each line is).
func (c *Compiler) compile(ctx context.Context, pkgs []Package, bs []*binary) {
	c.mu.Lock()
	c.chunks++
	dir := filepath.Join(c.out, strconv.Itoa(c.chunks))
	c.mu.Unlock()
	args := append([]string{"test", "-c", "-json", "-o", dir + string(filepath.Separator)}, c.Flags...)
	for _, p := range pkgs { // go test reads no "--": its packages end at the first flag
		args = append(args, p.ImportPath)
	}
	cmd := exec.CommandContext(ctx, c.Go, args...)
	cmd.Dir = c.Dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	output := buildOutput(stdout.Bytes())
	for i, p := range pkgs {
		b := bs[i]
		bin := filepath.Join(dir, binaryName(p.ImportPath)+".test")
		_, statErr := os.Stat(bin)
		if statErr != nil && output[p.ImportPath] == "" && ctx.Err() == nil && len(pkgs) > 1 {
			// Failed by another package's build output (a dependency's):
			// alone, every line of it is this one's.
			c.compile(ctx, []Package{p}, []*binary{b})
			continue
		}
		switch {
		case statErr == nil:
			b.path = bin
		case output[p.ImportPath] != "":
			b.failed = output[p.ImportPath]
		case len(output) > 0:
			b.failed = joined(output)
		case ctx.Err() != nil:
			// Stopped, not failed: a later attempt compiles it again.
			b.err = ctx.Err()
			c.mu.Lock()
			delete(c.builds, p.ImportPath)
			c.mu.Unlock()
		default:
			b.failed = fmt.Sprintf("# %s\ngo test -c: %v\n%s", p.ImportPath, runErr, stderr.String())
		}
		close(b.ready)
	}
}

// buildOutput gathers go test -c -json's build output by package: the
// lines of "m/p [m/p.test]" and of "m/p" belong to m/p.
func buildOutput(events []byte) map[string]string {
	out := map[string]*strings.Builder{}
	sc := bufio.NewScanner(bytes.NewReader(events))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ev struct{ ImportPath, Action, Output string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Action != "build-output" {
			continue
		}
		pkg, _, _ := strings.Cut(ev.ImportPath, " ")
		pkg = strings.TrimSuffix(pkg, "_test")
		if out[pkg] == nil {
			out[pkg] = &strings.Builder{}
		}
		out[pkg].WriteString(ev.Output)
	}
	res := make(map[string]string, len(out))
	for k, v := range out {
		res[k] = v.String()
	}
	return res
}

// joined is all the build output, package by package.
func joined(output map[string]string) string {
	var b strings.Builder
	for _, pkg := range slices.Sorted(maps.Keys(output)) {
		b.WriteString(output[pkg])
	}
	return b.String()
}

// binaryName is the name go test -c gives a package's binary in a folder,
// before ".test": the last element of its import path, or the one before
// a major version suffix (m/v2).
func binaryName(importPath string) string {
	dir, last := path.Split(importPath)
	if len(last) > 1 && last[0] == 'v' && dir != "" {
		if _, err := strconv.Atoi(last[1:]); err == nil {
			return path.Base(strings.TrimSuffix(dir, "/"))
		}
	}
	return last
}
