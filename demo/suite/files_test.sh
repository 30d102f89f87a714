# Green.
. "$(dirname "$0")/lib.sh"
dir=$(mktemp -d)
echo hello > "$dir/f"
check "round trip" hello "$(cat "$dir/f")"
rm -rf "$dir"
finish
