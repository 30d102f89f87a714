# Flaky: fails its first attempt, passes the retry (hopper retries it within
# --max-requeues, and the report lists it as flaky).
. "$(dirname "$0")/lib.sh"
n=$(attempt)
echo "attempt $n"
check "the service answered" yes "$([ "$n" -ge 2 ] && echo yes || echo timeout)"
finish
