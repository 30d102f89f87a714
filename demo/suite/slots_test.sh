# Each worker slot gets its own TEST_ENV_NUMBER ("" for slot 1), so suites
# can give each slot its own database.
. "$(dirname "$0")/lib.sh"
echo "worker $HOPPER_WORKER_ID, unit $HOPPER_UNIT, TEST_ENV_NUMBER='$TEST_ENV_NUMBER'"
check "unit id in the environment" "$0" "$HOPPER_UNIT"
finish
