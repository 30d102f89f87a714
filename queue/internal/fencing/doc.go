// Package fencing is the switch of the hopper_unfenced build tag:
// EntryGuards says whether package queue's transitions watch entry guards
// (see queue/keys.go). It is false only in the test build that shows
// what goes wrong without them (make test-unfenced); never ship a binary
// built that way.
package fencing
