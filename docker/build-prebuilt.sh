#!/usr/bin/env bash
# Usage: docker/build-prebuilt.sh BIN_DIR [TAG]
#
# Builds the project's image (TAG, default mmo:local) from the `server` and `loadtest`
# binaries in BIN_DIR, e.g. target/release after
#
#   cargo build --release --locked -p server -p loadtest
#
# instead of compiling them again inside Docker as the Dockerfile does (see
# docker/Dockerfile.prebuilt). The base image must exist (docker/build-base.sh
# --runtime-only makes it; BASE_IMAGE names another). The binaries link this machine's
# glibc, so the script starts both in the new image and fails, naming the binary, when
# the image's libraries cannot run them.
set -euo pipefail
bin_dir=${1:?usage: docker/build-prebuilt.sh BIN_DIR [TAG]}
tag=${2:-mmo:local}
base_image=${BASE_IMAGE:-mmo-base:bookworm}
root=$(cd "$(dirname "$0")/.." && pwd)

for bin in server loadtest; do
  if [[ ! -x $bin_dir/$bin ]]; then
    echo "build-prebuilt: no executable $bin_dir/$bin (build it first: cargo build --release -p server -p loadtest)" >&2
    exit 1
  fi
done

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp "$bin_dir/server" "$bin_dir/loadtest" "$context/"
cp "$root/docker/Dockerfile.prebuilt" "$root/docker/http-probe.sh" "$root/loadtest/bench-slo.toml" "$context/"
# The maps without the files the navmesh builder writes next to them (.dockerignore's rule).
tar -C "$root" --exclude='*.navmesh' --exclude='*.svg' -c maps | tar -C "$context" -x

echo "==> docker build $tag from $bin_dir (base $base_image)" >&2
docker build -q --build-arg "BASE_IMAGE=$base_image" -f "$context/Dockerfile.prebuilt" \
  -t "$tag" "$context" >/dev/null

for bin in server loadtest; do
  if ! out=$(docker run --rm --entrypoint "$bin" "$tag" --version 2>&1); then
    echo "build-prebuilt: $bin_dir/$bin does not run in $tag (base $base_image):" >&2
    echo "$out" >&2
    exit 1
  fi
  echo "==> $tag: $out" >&2
done
