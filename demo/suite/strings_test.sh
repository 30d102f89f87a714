# Quick and green.
. "$(dirname "$0")/lib.sh"
check "upper case" HOPPER "$(echo hopper | tr a-z A-Z)"
check "length" 6 "$(printf hopper | wc -c | tr -d ' ')"
finish
