package cli

// The help of each command, printed by --help (to stdout, exit 0).

const topUsage = `hopper spreads the units of a test suite (spec files, Go packages, any string
a command understands) across workers through Redis Streams, retries and
reclaims them within budgets, and gives the build one verdict.

Usage:
  hopper run [-j N] [flags] [units...] -- COMMAND ARGS...
        the whole suite on this machine: publish, N workers, the report
        (on an embedded Redis unless --redis or HOPPER_REDIS_URL names
        one; REDIS_URL is read by the other commands alone)
  hopper work [flags] [units...] -- COMMAND ARGS...
        one CI machine's worker: take units of the shared build until it is done
  hopper report [flags]     wait for the build, print its verdict, exit 0/1/2/3
  hopper status [flags]     a live view of a build while it runs
  hopper events [flags]     the build's attempt log as JSON lines
  hopper version            hopper's version, VCS revision and Go version
                            (also --version)

COMMAND runs once per attempt at a unit, with every {unit} in its arguments
replaced by the unit id, and HOPPER_UNIT, HOPPER_BUILD_ID, HOPPER_WORKER_ID and
TEST_ENV_NUMBER in its environment. Exit 0 passes the unit.

The Redis is one server or a Redis Cluster: --redis takes several of a
cluster's nodes as redis://HOST:PORT,HOST:PORT (the forms are at the end of
each command's help).

Run 'hopper <command> --help' for the flags of a command.
`

const workUsage = `Usage: hopper work [flags] [units...] -- COMMAND ARGS...
       hopper work --go [flags] -- [go test flags] [packages]

Joins the build (publishing it when first), then takes units one at a time and
runs COMMAND for each, until every unit of the build has its final state. Every
worker of a build must be given the same units, unit type, command and
revision. Exit status: 0 when the build is complete (whatever the tests did:
the verdict is the report's), 2 on an infrastructure error, 4 when a unit ran
past --max-unit-duration + --timeout; with --report-on-exit, the report's,
unless a worker slot failed (2, and no report).

COMMAND runs with every {unit} replaced by the unit id, in a process group of
its own, with HOPPER_UNIT, HOPPER_BUILD_ID, HOPPER_WORKER_ID and
TEST_ENV_NUMBER ("" for slot 1, else the slot number) in its environment. Exit
0: passed. Another exit status: failed, retried within --max-requeues. Killed
by a signal: failed for good. Its output is printed once, for the attempt
whose result counts. With {units} (an argument of its own) it runs a batch
of units, one argument each (see --batch), in HOPPER_UNITS too; each unit's
outcome comes from go test -json events, else from a JUnit file the command
writes to $HOPPER_JUNIT, else a failed batch is run again unit by unit.

With --go, what follows -- is what go test takes (packages, default ./...):
the units are the packages with tests, each run as its compiled test binary
(see docs/cli.md#go-native-runs).

Flags (environment fallbacks in brackets):
  --build ID               build id [HOPPER_BUILD_ID, then the CI's]
  --worker ID              worker id [HOPPER_WORKER_ID, then the CI's node index,
                           then <hostname>-<pid>]
  --redis URL              the Redis or Redis Cluster (forms below)
                           [HOPPER_REDIS_URL, REDIS_URL]
  --units-from FILE        unit ids, one a line (- for stdin), after the arguments'
  --unit-type TYPE         what the units are (default file)
  --revision REV           source revision under test, part of the fingerprint
  --timeout SECONDS        silence after which a unit is reclaimed (default 180)
  --max-unit-duration SECONDS
                           run time after which a unit is abandoned (default 900)
  --max-requeues N         retries per failed unit (default 0), within:
  --requeue-tolerance X    share of units that may be retried, 0..1 (default 0:
                           none, whatever --max-requeues says)
  --max-reclaims N         times a unit may be taken from a lost worker (default 3)
  --processes N            worker slots in this process (default 1)
  --ttl SECONDS            inactivity TTL of the build's keys (default 14400)
  --tombstone-ttl SECONDS  how long a build id stays used (default 604800)
  --init-timeout SECONDS   wait for the build to be published (default 300)
  --progress MODE          auto, live, plain or off (default auto: a live line on
                           a terminal, a plain line every few seconds otherwise)
  --batch N                units per command with {units} (default 8; fewer near
                           the end); 1 with {unit}
  --timings FILE|off       where the units' durations are kept between builds,
                           to queue the longest first (default: a key of the
                           suite's on the Redis; hopper run's embedded server:
                           a file in the user's cache dir)
  --retry-failed           arriving at a complete build that did not pass, open a
                           new round of it that runs again only the units that
                           did not pass (a CI retry does so by itself: GitLab,
                           GitHub Actions, Buildkite; see the README)
  --go                     run Go packages natively (above)
  --report-on-exit         run the report once the build is complete; then also:
  --summary-out FILE  --failed-out FILE  --junit-out FILE  --html-out FILE
  --allow-empty  --min-examples N      (see hopper report --help)
` + redisForms

const runUsage = `Usage: hopper run [-j N] [flags] [units...] -- COMMAND ARGS...
       hopper run --go [-j N] [flags] -- [go test flags] [packages]

Runs a whole build on this machine: publishes the units, runs N worker slots
until every unit has its final state, then prints the report and exits with
its code (0 passed, 1 failed, 2 infrastructure, 3 incomplete); when a worker
slot failed (a fingerprint mismatch, Redis lost), 2 with no report. A slot
whose unit ran past --max-unit-duration + --timeout goes on as a new worker
(<slot id>.r2, ...), which reclaims that unit after --timeout, within
--max-reclaims, and runs the rest. Without --redis (and without
HOPPER_REDIS_URL) it runs on an embedded in-process Redis-compatible server,
so nothing needs to be installed; REDIS_URL, often an application's own
database, is not read. With --redis, other machines can join the build with
hopper work.

COMMAND is run as by hopper work (see hopper work --help).

Flags:
  -j, --jobs N             worker slots (default the number of CPUs)
  --build ID               build id (default generated; [HOPPER_BUILD_ID, then the CI's])
  --redis URL              a real Redis or Redis Cluster (forms below)
                           [HOPPER_REDIS_URL; never REDIS_URL]
  --worker ID              worker id prefix [HOPPER_WORKER_ID, then the CI's
                           node index, then <hostname>-<pid>]
  --units-from FILE, --unit-type, --revision, --timeout, --max-unit-duration,
  --max-requeues, --requeue-tolerance, --max-reclaims, --ttl, --tombstone-ttl,
  --init-timeout, --progress, --batch, --timings, --retry-failed, --go
                           as hopper work
  --summary-out FILE, --failed-out FILE, --junit-out FILE, --html-out FILE,
  --allow-empty, --min-examples N as hopper report
` + redisForms

const reportUsage = `Usage: hopper report [flags]

Waits for the build to be published and for every unit to be finalized, reads
its attempt log, prints the verdict and exits with its code (0 passed,
1 failed, 2 infrastructure, 3 incomplete): failed when a unit failed or too
few examples ran, infrastructure when there is no build or Redis cannot be
read, incomplete when units were never finalized, the state expired or
publishing failed. It only reads.

Flags:
  --build ID                 build id [HOPPER_BUILD_ID, then the CI's]
  --redis URL                the Redis or Redis Cluster (forms below)
                             [HOPPER_REDIS_URL, REDIS_URL]
  --wait SECONDS             wait for completion (default 1080); --timeout is
                             its old name, deprecated: it warns
  --init-timeout SECONDS     wait for the build to appear (default 300)
  --inactive-timeout SECONDS give up when no worker was seen this long (default 300)
  --summary-out FILE         JSON summary
  --failed-out FILE          failed and never-finalized unit ids, one a line
  --junit-out FILE           JUnit XML: a test suite per unit, with a test case
                             per test when its command reported them (go test
                             -json, a JUnit file in $HOPPER_JUNIT), else one
  --html-out FILE            self-contained HTML report with a timeline
  --allow-empty              a build of zero examples passes
  --min-examples N           fail with fewer examples (default 0); examples
                             are the tests the publisher counted, else the
                             units
` + redisForms

const statusUsage = `Usage: hopper status [flags]

Shows a build while it runs: progress, retries, failures, and a table of
workers (last seen, current unit, units processed). On a terminal it refreshes
until the build is complete (or Ctrl-C); otherwise, or with --once, it prints
one snapshot. A build a CI retry ran again shows its latest round ("round 2
of 2"). Exit status 0, or 2 when the build or Redis cannot be read.

Flags:
  --build ID           build id [HOPPER_BUILD_ID, then the CI's]
  --redis URL          the Redis or Redis Cluster (forms below)
                       [HOPPER_REDIS_URL, REDIS_URL]
  --once               print one snapshot
  --interval SECONDS   refresh interval (default 1)
` + redisForms

const eventsUsage = `Usage: hopper events [flags]

Prints the build's attempt log, one JSON object a line, as the workers wrote
it. With --follow, keeps printing new events until the build's latest round
is complete (or Ctrl-C): a retry round that opens while it follows is
followed too. A build whose state expired or was evicted exits 3: its log is
gone and it can never complete.

Flags:
  --build ID     build id [HOPPER_BUILD_ID, then the CI's]
  --redis URL    the Redis or Redis Cluster (forms below)
                 [HOPPER_REDIS_URL, REDIS_URL]
  --follow, -f   keep following the log
` + redisForms

const versionUsage = `Usage: hopper version (or hopper --version)

Prints hopper's module version, the VCS revision it was built from (marked
"modified" when the checkout had changes) and the Go version that built it.
`

// redisForms ends the help of every command that takes --redis: the forms
// redisOption reads.
const redisForms = `
Redis URL forms (--redis, HOPPER_REDIS_URL, REDIS_URL):
  redis://[USER:PASSWORD@]HOST:PORT[/DB]    one server; rediss:// for TLS
  redis://[USER:PASSWORD@]HOST:PORT,HOST:PORT,...
                                            a Redis Cluster, by a few of its nodes
  redis://[USER:PASSWORD@]HOST:PORT?addr=HOST:PORT&addr=HOST:PORT
                                            the same cluster seeds, another way
  HOST:PORT[,HOST:PORT...]                  as redis://HOST:PORT[,HOST:PORT...]
  unix:///PATH                              a local socket
A missing port is 6379. The client learns the rest of a cluster from the nodes
it is given, and finds out when a single address is a cluster node. A cluster
has only database 0.

TLS (rediss://): the server's certificate is checked against the system's
roots and the host name; a refused one is one line and exit 2.
  --redis-ca FILE          PEM CA bundle to trust as well [HOPPER_REDIS_CA]
  --redis-cert FILE --redis-key FILE
                           client certificate and key, for mutual TLS
                           [HOPPER_REDIS_CERT, HOPPER_REDIS_KEY]
  --redis-insecure-skip-verify
                           check no certificate (warns on every run)
`
