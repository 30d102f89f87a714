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
