// Package redistest runs a real Redis server in a Docker container for the
// tests of one package, on machines that reach no image registry.
//
// The image (default hopper-redis:7.0) is built locally from the machine's own
// Debian redis-server by `make redis-image` (.ci/redis-image.sh); nothing is
// ever pulled. A package shares one container, started by [Main] from its
// TestMain, and every test keeps to its own keys by taking a fresh [BuildID]:
//
//	var srv *redistest.Server
//
//	func TestMain(m *testing.M) { os.Exit(redistest.Main(m, &srv)) }
//
//	func TestSomething(t *testing.T) {
//		c := srv.Client(t)       // closed by t.Cleanup
//		build := redistest.BuildID(t)
//		...
//	}
//
// A package that tests against a Redis Cluster shares one the same way,
// with [ClusterMain] and [StartCluster]: nodes of the same image and
// command, on the host's network, each announcing 127.0.0.1 and ports of its
// own, with helpers to move a slot ([Cluster.BeginMigration],
// [Cluster.MigrateSlot]) and to fail a primary over ([Cluster.Failover],
// [Cluster.Kill] and [Cluster.WaitPromoted], [Cluster.Revive]).
//
// Environment:
//   - HOPPER_REDIS_IMAGE: the image to run (default [DefaultImage]).
//   - HOPPER_REDIS_CMD: replaces the image's CMD (the arguments of its
//     ENTRYPOINT, if it has one), split on spaces with '…' and "…" quoting, so
//     that a matrix can run another server, e.g.
//     `valkey-server --save "" --protected-mode no`. The server must listen on
//     port 6379 and log "Ready to accept connections".
//   - HOPPER_TEST_ACL: when non-empty, [Server.Client] connects as
//     [MinimalUser], an ACL user with the least privilege hopper needs
//     ([MinimalACL]: no scripting, admin or dangerous command, no INFO,
//     CLIENT or CONFIG, only keys under hopper:), so the suite proves that
//     the code under test never needs more.
//   - TESTCONTAINERS_RYUK_DISABLED and TESTCONTAINERS_HOST_OVERRIDE: set to
//     "true" and "127.0.0.1" when unset (the reaper image cannot be pulled, and
//     the mapped port must be dialled on loopback).
//
// Without the reaper, a test binary killed before TestMain returns leaves its
// container behind; such containers carry the label [Label] and can be removed
// with `docker rm -f $(docker ps -aq --filter label=hopper.redistest)`.
//
// This package is imported by tests only.
package redistest
