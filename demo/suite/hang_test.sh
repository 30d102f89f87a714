# Hangs on its first attempt, past --max-unit-duration: the worker records it
# abandoned, stops renewing its hold and, once --timeout more has passed,
# aborts (killing the hung process group); another worker reclaims the unit
# and its second attempt passes.
. "$(dirname "$0")/lib.sh"
n=$(attempt)
if [ "$n" -eq 1 ]; then
	echo "attempt $n: waiting for a lock that never comes..."
	sleep 600
fi
echo "attempt $n"
check "lock taken" yes yes
finish
