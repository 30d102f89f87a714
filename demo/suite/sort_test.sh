# Green, but slow: it stands out on the timeline.
. "$(dirname "$0")/lib.sh"
sleep 1.5
check "sorted" "1 2 3" "$(printf '3\n1\n2\n' | sort -n | tr '\n' ' ' | sed 's/ $//')"
finish
