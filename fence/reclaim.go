package fence

// ScanWindow is how many pending entries one reclaim looks at from the start
// of a stream's pending list: XAUTOCLAIM with COUNT 1 scans at most ten, and
// the reference transition claims with exactly that command.
const ScanWindow = 10

// Idle reports whether a pending entry is eligible for reclaim after
// timeoutMS: a zero timeout makes every pending entry eligible, as it does for
// XAUTOCLAIM and XPENDING IDLE.
func Idle(row Row, timeoutMS int64) bool {
	return timeoutMS == 0 || row.IdleMS >= timeoutMS
}

// Claimable returns the index in window (the first ScanWindow rows of the
// pending list, in id order) of the entry a reclaim takes: the first one idle
// for timeoutMS whose stream entry still exists. It returns -1 when none is.
// exists reports whether the stream entry behind a row is still there; rows
// whose entry was deleted are skipped, as XAUTOCLAIM skips (and drops) them.
func Claimable(window []Row, timeoutMS int64, exists func(Row) bool) int {
	for i, row := range window {
		if i >= ScanWindow {
			break
		}
		if !exists(row) {
			continue
		}
		if Idle(row, timeoutMS) {
			return i
		}
	}
	return -1
}
