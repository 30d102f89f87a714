// Package integration tests hopper against a real Redis in a container: one
// container for the package, one build id per test.
package integration

import (
	"os"
	"testing"

	"github.com/hopper-queue/hopper/internal/redistest"
)

var srv *redistest.Server

func TestMain(m *testing.M) { os.Exit(redistest.Main(m, &srv)) }
