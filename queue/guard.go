//go:build !hopper_unfenced

package queue

// entryGuards is false only under the hopper_unfenced build tag, which turns
// off the WATCH on entry guards so that a test can show what goes wrong
// without them: a transaction that watches the stream key (or nothing) does
// not see XACK, XCLAIM or XAUTOCLAIM by others, and units get settled twice;
// and a kept watch commits unwatched.
const entryGuards = true
