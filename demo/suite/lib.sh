# A tiny test library for the demo suite: check DESCRIPTION WANT GOT, then
# finish. Sourced by each *_test.sh.
failures=0
check() {
	if [ "$2" = "$3" ]; then
		echo "ok - $1"
	else
		echo "not ok - $1: expected $2, got $3"
		failures=$((failures + 1))
	fi
}
finish() {
	if [ "$failures" -gt 0 ]; then
		echo "$failures failure(s)"
		exit 1
	fi
	exit 0
}
# attempt counts this unit's runs in $DEMO_STATE (one counter file a unit).
attempt() {
	f="$DEMO_STATE/$(basename "$0").count"
	n=$(($(cat "$f" 2>/dev/null || echo 0) + 1))
	echo "$n" > "$f"
	echo "$n"
}
