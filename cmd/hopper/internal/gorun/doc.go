// Package gorun is hopper's Go-native mode (hopper run --go, hopper work
// --go; see docs/cli.md#go-native-runs): the units are the packages with
// test files, and a worker runs their compiled test binaries itself rather
// than one go command per unit, which loads the package graph and vets
// before a test runs.
//
// A worker compiles the binaries it needs with go test -c (several
// packages at once; under hopper run, all of them, ahead of the runs),
// runs each in its package's folder with the flags go test would give it,
// reads the per-test events through test2json, and prints what go test
// would print. A failed attempt's retry runs only its failed top-level
// tests; a package longer than its fair share of the slots goes out as
// shards of its top-level tests.
package gorun
