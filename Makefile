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

.PHONY: test redis-image bench lint

test: redis-image
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...
	@# once more as an ACL user denied every scripting command
	@if [ -n "$$(find integration -name '*.go' 2>/dev/null)" ]; then \
		echo "HOPPER_TEST_ACL=1 $(GO) test -race -count=1 ./integration/..."; \
		HOPPER_TEST_ACL=1 $(GO) test -race -count=1 ./integration/...; \
	else echo "no packages in ./integration yet: ACL run has nothing to test"; fi

redis-image:
	bash .ci/redis-image.sh

bench: redis-image
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint:
	$(GO) vet ./...
	@out="$$($(GOFMT) -l .)"; if [ -n "$$out" ]; then \
		echo "gofmt -l: these files need gofmt -w:"; echo "$$out"; exit 1; fi
