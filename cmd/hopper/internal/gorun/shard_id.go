package gorun

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/hopper-queue/hopper/queue"
)

// A shard's unit id is its package's import path, a space (which no
// import path holds), and its tests: "-run ^(TestA|TestB)$" as the binary
// is given it, or, when that would not fit a unit id, "tests <hex>": a
// bitmap over the package's top-level tests in go test's order. Any worker
// reads back the same tests from the id and its own copy of the source:
// the publisher's split needs no other record.
const (
	shardRunPrefix    = "-run "
	shardBitmapPrefix = "tests "
	// readableIDBytes bounds the readable form, leaving the rest of a
	// unit id's room unused rather than filling it with names.
	readableIDBytes = queue.MaxIDBytes / 2
)

// ShardID is the unit id of the shard of pkg that runs tests, out of all
// (the package's top-level tests in order).
func ShardID(pkg string, tests, all []string) string {
	id := pkg + " " + shardRunPrefix + runPattern(tests)
	if len(id) <= readableIDBytes {
		return id
	}
	bits := make([]byte, (len(all)+7)/8)
	for i, n := range all {
		if slices.Contains(tests, n) {
			bits[i/8] |= 1 << (i % 8)
		}
	}
	return pkg + " " + shardBitmapPrefix + hex.EncodeToString(bits)
}

// ShardIDs are the unit ids of a package's shards; ok is false when one
// would be longer than a unit id may be (a bitmap over many thousands of
// tests): the package then stays whole.
func ShardIDs(pkg string, shards [][]string, all []string) (ids []string, ok bool) {
	for _, s := range shards {
		id := ShardID(pkg, s, all)
		if len(id) > queue.MaxIDBytes {
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, true
}

// ParseUnitID reads a unit id back: the package, and a shard's tests (nil
// for the whole package). all is the package's top-level tests, which a
// bitmap id refers to.
func ParseUnitID(id string, all func(pkg string) ([]string, bool)) (pkg string, tests []string, err error) {
	pkg, spec, sharded := strings.Cut(id, " ")
	if !sharded {
		return pkg, nil, nil
	}
	names, ok := all(pkg)
	if !ok {
		return "", nil, fmt.Errorf("unit %q: no package %s among this worker's", id, pkg)
	}
	switch {
	case strings.HasPrefix(spec, shardRunPrefix+"^(") && strings.HasSuffix(spec, ")$"):
		list := strings.TrimSuffix(strings.TrimPrefix(spec, shardRunPrefix+"^("), ")$")
		tests = strings.Split(list, "|")
	case strings.HasPrefix(spec, shardBitmapPrefix):
		bits, herr := hex.DecodeString(strings.TrimPrefix(spec, shardBitmapPrefix))
		if herr != nil || len(bits) != (len(names)+7)/8 {
			return "", nil, fmt.Errorf("unit %q: its test bitmap does not fit the %d tests of %s here", id, len(names), pkg)
		}
		for i, n := range names {
			if bits[i/8]&(1<<(i%8)) != 0 {
				tests = append(tests, n)
			}
		}
	default:
		return "", nil, fmt.Errorf("unit %q: not a package or a shard of one", id)
	}
	for _, t := range tests {
		if !slices.Contains(names, t) {
			return "", nil, fmt.Errorf("unit %q: %s has no test %s here", id, pkg, t)
		}
	}
	return pkg, tests, nil
}

// PackageOf is the package a unit id runs (all of it, or a shard).
func PackageOf(id string) string {
	pkg, _, _ := strings.Cut(id, " ")
	return pkg
}
