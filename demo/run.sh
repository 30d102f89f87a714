#!/usr/bin/env bash
# make demo: the README's main-job command on the embedded server, over the
# small suite in demo/suite (quick passes, a slow unit, a flaky unit, a hard
# failure and a unit that hangs past --max-unit-duration), ending with the
# report. Usage: demo/run.sh [path/to/hopper]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hopper=${1:-bin/hopper}
out=${HOPPER_DEMO_OUT:-${TMPDIR:-/tmp}/hopper-demo}
rm -rf "$out"
mkdir -p "$out/state"
export DEMO_STATE="$out/state" # the flaky and hanging units count their attempts here

set -x
"$hopper" run -j 3 \
	--max-requeues 2 --requeue-tolerance 0.5 \
	--timeout 2 --max-unit-duration 3 \
	--summary-out "$out/summary.json" --junit-out "$out/junit.xml" --html-out "$out/report.html" \
	demo/suite/*_test.sh -- sh {unit}
code=$?
{ set +x; } 2>/dev/null

echo
echo "hopper run exited $code. Reports: $out/report.html (open it in a browser), $out/junit.xml, $out/summary.json"
if [ "$code" -eq 1 ]; then
	echo "The demo build fails on purpose: demo/suite/broken_test.sh always fails. flaky_test.sh passed on its retry, hang_test.sh was abandoned and reclaimed."
	exit 0
fi
echo "demo: expected exit code 1 (a failed build), got $code" >&2
exit 1
