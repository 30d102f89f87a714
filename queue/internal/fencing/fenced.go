//go:build !hopper_unfenced

package fencing

// EntryGuards is false only under the hopper_unfenced build tag (see
// unfenced.go).
const EntryGuards = true
