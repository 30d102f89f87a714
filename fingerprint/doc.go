// Package fingerprint tells whether two workers would run the same suite.
//
// Workers that disagree on what the suite is must never share a build: one
// would finalize units the other never heard of, and the report would call a
// different suite green. The publisher stores the build's fingerprint in meta;
// every joiner computes its own from its own inputs and compares.
//
// A fingerprint is the SHA-256 (hex) of the canonical JSON (keys sorted, no
// HTML escaping) of the inputs: the ordered unit ids, the unit type, the
// command template and the revision. Beside it, a short digest of each input
// alone lets a joiner say which inputs differ without the publisher storing
// the inputs themselves.
//
// The package is pure: no Redis client, no clock, no state. Every function is
// safe for concurrent use.
package fingerprint
