package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"
)

const (
	// DefaultImage is the image run when HOPPER_REDIS_IMAGE is unset.
	DefaultImage = "hopper-redis:7.0"
	// Label is set on every container this package starts.
	Label = "hopper.redistest"

	redisPort  = "6379/tcp"
	readyLog   = "Ready to accept connections"
	startLimit = 30 * time.Second
)

var (
	// ErrDockerUnavailable means no Docker engine answered.
	ErrDockerUnavailable = errors.New("redistest: docker unavailable (start Docker, then run `make redis-image`)")
	// ErrImageMissing means the image is not in the local engine; it is never
	// pulled, so it must be built with `make redis-image`.
	ErrImageMissing = errors.New("redistest: image missing (run `make redis-image`)")
)

// Server is one Redis container. Its methods are safe for concurrent use, but
// Pause, Unpause and Restart act on every client of the server: a test that
// calls them should not run in parallel with tests sharing the server, or
// should Start a server of its own.
type Server struct {
	ctr    *testcontainers.DockerContainer
	docker *testcontainers.DockerClient

	mu       sync.Mutex
	addr     string // "127.0.0.1:port"
	aclReady bool   // MinimalUser exists on the running server
}

// Start runs a new Redis container and returns once it accepts connections.
// The container's port 6379 is published on 127.0.0.1 at a port chosen here
// rather than by Docker, so that it stays the same across [Server.Restart].
//
// The caller must call [Server.Terminate]. Start fails with an error wrapping
// [ErrDockerUnavailable] or [ErrImageMissing] when those are the cause.
func Start(ctx context.Context) (*Server, error) {
	cmd, err := command()
	if err != nil {
		return nil, err
	}
	return start(ctx, cmd)
}

// start is Start with the server's arguments (nil: the image's CMD) and
// more settings of the container.
func start(ctx context.Context, cmd []string, extra ...testcontainers.ContainerCustomizer) (*Server, error) {
	setEnvDefaults()

	docker, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDockerUnavailable, err)
	}
	img := Image()
	if _, err := docker.ImageInspect(ctx, img); err != nil {
		docker.Close()
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("%w: %s", ErrImageMissing, img)
		}
		return nil, fmt.Errorf("redistest: inspect image %s: %w", img, err)
	}

	// A port picked free a moment ago can be taken before Docker binds it;
	// try a few.
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			docker.Close()
			return nil, err
		}
		ctr, err := run(ctx, img, cmd, port, extra...)
		if err == nil {
			s := &Server{ctr: ctr, docker: docker}
			if err := s.readAddr(ctx); err != nil {
				_ = s.Terminate(context.WithoutCancel(ctx))
				return nil, err
			}
			return s, nil
		}
		lastErr = err
		if ctr != nil {
			_ = ctr.Terminate(context.WithoutCancel(ctx))
		}
		if ctx.Err() != nil || !isPortConflict(err) {
			break
		}
	}
	docker.Close()
	return nil, fmt.Errorf("redistest: start %s: %w", img, lastErr)
}

func run(ctx context.Context, img string, cmd []string, hostPort int, extra ...testcontainers.ContainerCustomizer) (*testcontainers.DockerContainer, error) {
	ctx, cancel := context.WithTimeout(ctx, startLimit)
	defer cancel()
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(tclog.NewNoopLogger()),
		testcontainers.WithExposedPorts(redisPort),
		testcontainers.WithLabels(map[string]string{Label: "true"}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{
				network.MustParsePort(redisPort): {{
					HostIP:   netip.AddrFrom4([4]byte{127, 0, 0, 1}),
					HostPort: strconv.Itoa(hostPort),
				}},
			}
		}),
		// The image has no shell: wait without exec'ing inside the container.
		testcontainers.WithWaitStrategy(
			wait.ForListeningPort(redisPort).SkipInternalCheck(),
			wait.ForLog(readyLog),
		),
	}
	if cmd != nil {
		opts = append(opts, testcontainers.WithCmd(cmd...))
	}
	return testcontainers.Run(ctx, img, append(opts, extra...)...)
}

// Addr returns the server's address, "127.0.0.1:port".
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Container returns the underlying container, for faults this package does
// not wrap. After changing the container's state directly, the caller is on
// its own: [Server.Addr] is not re-read and the ACL user is not re-created.
func (s *Server) Container() *testcontainers.DockerContainer { return s.ctr }

// Terminate stops and removes the container. Clients still open fail from
// then on.
func (s *Server) Terminate(ctx context.Context) error {
	defer s.docker.Close()
	if err := s.ctr.Terminate(ctx); err != nil {
		return fmt.Errorf("redistest: terminate: %w", err)
	}
	return nil
}

// readAddr reads the host port Docker maps to the container's 6379.
func (s *Server) readAddr(ctx context.Context) error {
	p, err := s.ctr.MappedPort(ctx, redisPort)
	if err != nil {
		return fmt.Errorf("redistest: mapped port: %w", err)
	}
	s.mu.Lock()
	s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(int(p.Num())))
	s.mu.Unlock()
	return nil
}

// Image returns the image Start runs: HOPPER_REDIS_IMAGE or [DefaultImage].
func Image() string {
	if img := os.Getenv("HOPPER_REDIS_IMAGE"); img != "" {
		return img
	}
	return DefaultImage
}

// setEnvDefaults must run before testcontainers reads its configuration,
// which it does once per process.
func setEnvDefaults() {
	for k, v := range map[string]string{
		"TESTCONTAINERS_RYUK_DISABLED": "true",
		"TESTCONTAINERS_HOST_OVERRIDE": "127.0.0.1",
	} {
		if _, ok := os.LookupEnv(k); !ok {
			os.Setenv(k, v)
		}
	}
}

// command returns HOPPER_REDIS_CMD split into arguments, or nil for the
// image's own CMD.
func command() ([]string, error) {
	raw := os.Getenv("HOPPER_REDIS_CMD")
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	args, err := splitArgs(raw)
	if err != nil {
		return nil, fmt.Errorf("redistest: HOPPER_REDIS_CMD: %w", err)
	}
	return args, nil
}

// splitArgs splits s on white space; '…' and "…" group words and may be
// empty (`--save ""`). There are no escapes.
func splitArgs(s string) ([]string, error) {
	var (
		args  []string
		cur   strings.Builder
		inArg bool
		quote rune
	)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inArg = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteRune(r)
			inArg = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, s)
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redistest: pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func isPortConflict(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "port is already allocated") ||
		strings.Contains(msg, "address already in use")
}
