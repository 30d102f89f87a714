# A real failure: every attempt fails the same way, and the build fails.
. "$(dirname "$0")/lib.sh"
check "answer" 42 $((6 * 7 - 1))
finish
