#!/usr/bin/env bash
# The server matrix (issue 7): the whole integration suite (./integration/...,
# the cluster tests in integration/cluster included), then its ACL pass
# (HOPPER_TEST_ACL=1: the minimal ACL user, redistest.MinimalACL), against each
# server image in turn. Every run happens even when one fails; a summary with
# each run's result and time ends the output, and the exit code is 1 if any
# run failed.
#
#   bash .ci/test-matrix.sh                       # the three servers below
#   HOPPER_MATRIX="hopper-valkey:8.1" bash .ci/test-matrix.sh
#
# The images are built by .ci/redis-image.sh (hopper-redis:7.0) and
# .ci/server-images.sh (hopper-redis:8.0, hopper-valkey:8.1); `make
# test-matrix` builds them first. Each image's ENTRYPOINT is its server, so
# HOPPER_REDIS_CMD is cleared for the matrix.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO="${GO:-go}"
read -r -a images <<<"${HOPPER_MATRIX:-hopper-redis:7.0 hopper-redis:8.0 hopper-valkey:8.1}"
export TESTCONTAINERS_RYUK_DISABLED="${TESTCONTAINERS_RYUK_DISABLED:-true}"
export TESTCONTAINERS_HOST_OVERRIDE="${TESTCONTAINERS_HOST_OVERRIDE:-127.0.0.1}"

summary=()
failed=0
for image in "${images[@]}"; do
  for pass in default acl; do
    acl=""
    [[ "$pass" == acl ]] && acl=1
    echo "==> $image ($pass user): HOPPER_REDIS_IMAGE=$image${acl:+ HOPPER_TEST_ACL=1} $GO test -race -count=1 ./integration/..."
    start=$SECONDS
    if env -u HOPPER_REDIS_CMD HOPPER_REDIS_IMAGE="$image" HOPPER_TEST_ACL="$acl" \
      "$GO" test -race -count=1 ./integration/...; then
      result=ok
    else
      result=FAIL
      failed=1
    fi
    summary+=("$(printf '%-20s %-8s %-4s %4ds' "$image" "$pass" "$result" $((SECONDS - start)))")
  done
done

echo "==> server matrix"
printf '%s\n' "${summary[@]}"
exit "$failed"
