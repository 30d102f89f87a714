# hopper: `make test` runs every test against real Redis in Docker; the image is
# built locally (no registry needed) by `make redis-image`.

GO    ?= go
GOFMT ?= gofmt
# Pinned versions: the Go toolchain is go.mod's `go` line; the Redis under test
# is Debian 12's redis-server 7.0, checked by .ci/redis-image.sh.
REDIS_VERSION := 7.0
export HOPPER_REDIS_IMAGE ?= hopper-redis:$(REDIS_VERSION)

# The reaper image cannot be pulled; mapped ports are dialled on loopback.
export TESTCONTAINERS_RYUK_DISABLED ?= true
export TESTCONTAINERS_HOST_OVERRIDE ?= 127.0.0.1

# Comparison tests run the reference script, kept outside the project.
ROOT := $(dir $(abspath $(lastword $(MAKEFILE_LIST))))
REFERENCE_SCRIPT := $(abspath $(wildcard $(ROOT)../shared/reference/transition.lua))
ifneq ($(REFERENCE_SCRIPT),)
export HOPPER_REFERENCE_SCRIPT ?= $(REFERENCE_SCRIPT)
endif

.PHONY: test redis-image bench bench-quick bench-compat bench-probe lint

test: redis-image browser
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...
	@# once more as the minimal ACL user (redistest.MinimalACL, the README's ACL line)
	@if [ -n "$$(find integration -name '*.go' 2>/dev/null)" ]; then \
		echo "HOPPER_TEST_ACL=1 $(GO) test -race -count=1 ./integration/..."; \
		HOPPER_TEST_ACL=1 $(GO) test -race -count=1 ./integration/...; \
	else echo "no packages in ./integration yet: ACL run has nothing to test"; fi
	@$(MAKE) --no-print-directory test-inline
	@$(MAKE) --no-print-directory fuzz
	@$(MAKE) --no-print-directory test-unfenced

# The integration suite once more on the inline engine (queue.EngineInline,
# chosen by HOPPER_ENGINE): every transition alone, on reads of its own,
# must give what the default engine gives. Left out are the tests of the
# default engine's machinery itself (batches, chaining, kept reads and
# watches, read-ahead, the clock, the caches and paces), which count its
# round trips and aborts: the inline engine has none of it.
MACHINERY_TESTS = TestRequeuesTakeTurns TestRequeueBatch TestRequeueWaitingIsCancelled TestFencedBatch \
	TestChainedBatch TestChainedBatchAfterAbort TestClockCarriesTimeOnlyWhenDue TestEntryUnitReadOnce \
	TestKeptReadsCommitInOneRoundTrip TestKeptReadsStopForASlowWorker TestKeptReadsStayForAQuickWorker \
	TestKeptWatchCommitsInOneRoundTrip TestKeptWatchNeverCommitsWhatAnotherWorkerChanged \
	TestReadAheadReservesWithoutAReadOfItsOwn TestReadAheadKeepsTheOrder TestReadAheadOfAStoppedWorkerIsReclaimed \
	TestReservationsLookForIdleEntriesAtAPace TestReservationWithoutALookFindsMetaGone TestReclaimRoundTrips \
	TestTransitionSharesBuilds TestWorkerGuardUpkeep
empty :=
space := $(empty) $(empty)
MACHINERY_SKIP = ^($(subst $(space),|,$(strip $(MACHINERY_TESTS))))$$
.PHONY: test-inline
test-inline: redis-image
	HOPPER_ENGINE=inline $(GO) test -race -count=1 -skip '$(MACHINERY_SKIP)' ./integration/...

# The concurrency test must catch the design it exists to rule out: built
# with -tags hopper_unfenced the transitions no longer watch entry guards
# (queue/internal/fencing), and TestConcurrentOwnership must then fail with
# units settled by workers that did not hold them, as must
# TestKeptReadsNeverCommitWhatAnotherWorkerChanged with a commit on kept
# reads, and TestKeptWatchNeverCommitsWhatAnotherWorkerChanged with a commit
# on a kept watch the build disarms. Passes only if all three do.
.PHONY: test-unfenced
test-unfenced: redis-image
	@echo "$(GO) test -race -count=1 -tags hopper_unfenced -run '^TestConcurrentOwnership$$' ./integration/ (must fail)"
	@out="$$($(GO) test -race -count=1 -tags hopper_unfenced -run '^TestConcurrentOwnership$$' ./integration/ 2>&1)"; rc=$$?; \
	if [ $$rc -eq 0 ]; then echo "test-unfenced: FAIL: TestConcurrentOwnership passed without entry guards"; exit 1; fi; \
	n=$$(printf '%s\n' "$$out" | grep -cE 'did not hold|finalized events of|finalized_count'); \
	if [ "$$n" -eq 0 ]; then printf '%s\n' "$$out" | tail -30; echo "test-unfenced: FAIL: it failed, but not on ownership"; exit 1; fi; \
	echo "test-unfenced: ok: without entry guards TestConcurrentOwnership fails ($$n ownership findings)"
	@# and a commit on kept reads (queue/internal/engine/kept_reads.go) goes through after another worker took the unit
	@out="$$($(GO) test -race -count=1 -tags hopper_unfenced -run '^TestKeptReadsNeverCommitWhatAnotherWorkerChanged$$' ./integration/ 2>&1)"; rc=$$?; \
	if [ $$rc -eq 0 ]; then echo "test-unfenced: FAIL: TestKeptReadsNeverCommitWhatAnotherWorkerChanged passed without entry guards"; exit 1; fi; \
	n=$$(printf '%s\n' "$$out" | grep -c 'after w2 took its unit'); \
	if [ "$$n" -eq 0 ]; then printf '%s\n' "$$out" | tail -30; echo "test-unfenced: FAIL: it failed, but not on ownership"; exit 1; fi; \
	echo "test-unfenced: ok: without entry guards TestKeptReadsNeverCommitWhatAnotherWorkerChanged fails ($$n modes committed on kept reads)"
	@# and a transition on a kept watch (queue/internal/engine/kept_watch.go), disarmed in that build, commits on reads another commit changed
	@out="$$($(GO) test -race -count=1 -tags hopper_unfenced -run '^TestKeptWatchNeverCommitsWhatAnotherWorkerChanged$$' ./integration/ 2>&1)"; rc=$$?; \
	if [ $$rc -eq 0 ]; then echo "test-unfenced: FAIL: TestKeptWatchNeverCommitsWhatAnotherWorkerChanged passed with kept watches disarmed"; exit 1; fi; \
	n=$$(printf '%s\n' "$$out" | grep -c -- '--- FAIL: TestKeptWatchNeverCommitsWhatAnotherWorkerChanged/'); \
	if [ "$$n" -ne 2 ]; then printf '%s\n' "$$out" | tail -30; echo "test-unfenced: FAIL: want both modes failing, $$n did"; exit 1; fi; \
	echo "test-unfenced: ok: with kept watches disarmed TestKeptWatchNeverCommitsWhatAnotherWorkerChanged fails ($$n modes)"

# A short run of every fuzz target (func Fuzz... in a _test.go file), one
# `go test -fuzz` per target, FUZZTIME each (11 targets: under a minute).
# Their seed corpora (testdata/fuzz and f.Add) already run with the tests;
# an input that fails is written to the package's testdata/fuzz.
# FUZZTIME is a count of inputs, not a duration: with a duration, Go 1.26's
# fuzzing coordinator can fail a target with a bare "context deadline
# exceeded" as its time runs out (golang/go#75804, fixed in Go 1.27), which
# failed a CI run here with no failing input found. 40,000 inputs take 0.5
# to 7 s a target on this kind of machine.
FUZZTIME ?= 40000x
FUZZ_TARGETS = $(shell grep -r --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]*' . | \
	sed -E 's|^\./(.*)/[^/]*_test\.go:func (Fuzz.*)$$|./\1:\2|' | sort)
.PHONY: fuzz
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "$(GO) test -run '^$$' -fuzz '^$${t#*:}$$' -fuzztime $(FUZZTIME) $${t%%:*}"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) "$${t%%:*}"; \
	done

# The fault tests (integration/fault_*_test.go, build tag faults): real
# worker processes (internal/faultworker) against Redis containers of their
# own, paused, restarted, emptied, SIGKILLed and SIGSTOPped, and the
# connection-kill and lost-reply tests that `make test` runs too. A few
# minutes. FAULTS_FLAGS=-v prints each test's "figures:" line.
.PHONY: test-faults
test-faults: redis-image
	$(GO) test -race -count=1 -tags faults -timeout 20m -run '^TestFault' $(FAULTS_FLAGS) ./integration/

redis-image:
	bash .ci/redis-image.sh

# The HTML report's screenshot test needs a headless Chromium: Debian's
# package, installed when missing (as root). Without it the test fails under
# CI and is skipped, saying so, elsewhere.
.PHONY: browser
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
	{ [ "$$(id -u)" -eq 0 ] && echo "installing Debian package chromium" && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	echo "make: no chromium, and not root to install it: the HTML report's screenshot test will be skipped (and fail under CI)"

# The harness of issue 5 (bench/): drains builds with 1, 8, 32 and 128
# workers, ours and the reference script alternating when the script is
# found, and prints the table; then the packages' micro-benchmarks. Tune with
# HOPPER_BENCH_UNITS (2000), HOPPER_BENCH_ROUNDS (3), HOPPER_BENCH_WORKERS
# (1,8,32,128) and HOPPER_BENCH_CTX (cancel). bench-quick: a smaller build.
bench: redis-image
	HOPPER_BENCH=1 $(GO) test -count=1 -run '^TestBench$$' -v -timeout 30m ./bench
	$(GO) test -run '^$$' -bench . -benchmem ./...

bench-quick: redis-image
	HOPPER_BENCH=1 HOPPER_BENCH_UNITS=$${HOPPER_BENCH_UNITS:-400} HOPPER_BENCH_ROUNDS=$${HOPPER_BENCH_ROUNDS:-1} \
		$(GO) test -count=1 -run '^TestBench$$' -v -timeout 10m ./bench

# The same harness with queue.Transition for our side, one call per
# transition with the script's KEYS and ARGV, where the script's side calls
# EVALSHA (bench/compat_test.go); tuned as bench.
bench-compat: redis-image
	HOPPER_BENCH=1 HOPPER_BENCH_API=transition $(GO) test -count=1 -run '^TestBench$$' -v -timeout 30m ./bench

# What a transition in one round trip on the shared connection would cost
# (bench/probe_test.go): heartbeats alone, hopper's, the script's and the
# probe's, at 1, 8 and 32 workers. Needs the reference script.
bench-probe: redis-image
	HOPPER_BENCH=1 HOPPER_BENCH_PROBE=1 $(GO) test -count=1 -run '^TestOneRoundTripProbe$$' -v -timeout 10m ./bench

# A real suite the project does not own (bench/suite): 48 packages of the
# Go standard library under go test -short, by go test -p 2, by hopper run
# -j 2 cold, again with the timings it recorded, and with --batch; prints
# each one's wall time, makespan lower bound and ratio. Heavy: minutes.
.PHONY: bench-suite
bench-suite: hopper
	$(GO) run ./bench/suite -hopper bin/hopper -go $(GO)

lint:
	$(GO) vet ./...
	@out="$$($(GOFMT) -l .)"; if [ -n "$$out" ]; then \
		echo "gofmt -l: these files need gofmt -w:"; echo "$$out"; exit 1; fi

# The hopper command (issue 4), built into bin/.
.PHONY: hopper demo
hopper:
	$(GO) build -o bin/hopper ./cmd/hopper

# The hopper command installed where go install puts commands: GOBIN, else
# GOPATH/bin (the README's install line).
.PHONY: install
install:
	$(GO) install ./cmd/hopper

# The main job of the README on the embedded server: `hopper run` over the
# demo suite in demo/suite, ending with the report (demo/run.sh).
demo: hopper
	bash demo/run.sh bin/hopper

# The server matrix (issue 7): the integration suite, cluster tests included,
# and its ACL pass against Redis 7.0, Redis 8.0 and Valkey 8.1, one after the
# other, with a summary at the end (.ci/test-matrix.sh). server-images builds
# the last two from Debian 13's packages (as root; about a minute, once).
.PHONY: test-matrix server-images
test-matrix: server-images
	HOPPER_REDIS_IMAGE=hopper-redis:$(REDIS_VERSION) bash .ci/redis-image.sh
	GO=$(GO) bash .ci/test-matrix.sh

server-images:
	bash .ci/server-images.sh
