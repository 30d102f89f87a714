# Green.
. "$(dirname "$0")/lib.sh"
sleep 0.5
check "fields" "b" "$(echo a:b:c | cut -d: -f2)"
finish
