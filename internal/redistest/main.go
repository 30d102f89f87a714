package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Main is the body of a package's TestMain: it starts a server, stores it in
// *srv, runs the tests, terminates the server and returns the exit code for
// os.Exit:
//
//	func TestMain(m *testing.M) { os.Exit(redistest.Main(m, &srv)) }
//
// When no server can be started (Docker not running, image not built) Main
// prints why and how to fix it, and returns 1 without running any test: the
// suite never passes by skipping the tests that need Redis. A failure to
// remove the container also fails the run, since no reaper would remove it.
func Main(m *testing.M, srv **Server) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	s, err := Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %s: no Redis to test against: %v\n", testBinary(), err)
		if !errors.Is(err, ErrDockerUnavailable) && !errors.Is(err, ErrImageMissing) {
			fmt.Fprintf(os.Stderr, "  is Docker running, and was `make redis-image` run (image %s)?\n", Image())
		}
		return 1
	}
	*srv = s

	code := m.Run()

	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Terminate(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "%v (container %s left behind)\n", err, s.ctr.GetContainerID())
		if code == 0 {
			code = 1
		}
	}
	return code
}

func testBinary() string {
	if len(os.Args) > 0 {
		return filepath.Base(os.Args[0])
	}
	return "tests"
}
