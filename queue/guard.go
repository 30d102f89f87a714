package queue

import "github.com/hopper-queue/hopper/queue/internal/fencing"

// entryGuards is false only under the hopper_unfenced build tag (see
// package fencing), which turns off the WATCH on entry guards so that a
// test can show what goes wrong without them: a transaction that watches
// the stream key (or nothing) does not see XACK, XCLAIM or XAUTOCLAIM by
// others, and units get settled twice; and a kept watch commits unwatched.
const entryGuards = fencing.EntryGuards
