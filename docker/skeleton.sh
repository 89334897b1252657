#!/usr/bin/env bash
# Usage: skeleton.sh SRC DEST
#
# Writes to DEST a copy of the workspace at SRC that holds only what decides the
# dependency build: every Cargo.toml, Cargo.lock, cargo's and rustup's config files, and
# an empty stub at each place where a crate's target (library, binary, bench, test,
# example, build script) starts. The Dockerfile builds the dependencies against this
# skeleton in a layer of its own; since the skeleton does not change when only a .rs file
# does, that layer is reused and a source change recompiles just the workspace's crates.
#
# Crates are found by their Cargo.toml, so a new workspace member needs no change here.
# Targets are found at cargo's default places; a target declared with a `path = ...`
# elsewhere needs its stub added below.
set -euo pipefail

src=${1:?usage: skeleton.sh SRC DEST}
dest=${2:?usage: skeleton.sh SRC DEST}
mkdir -p "$dest"
cd "$src"

# Every file below is listed relative to SRC; target/ and .git/ are never part of it.
list() {
  find . \( -name target -o -name .git \) -prune -o -type f \( "$@" \) -print
}

copy_exact() {
  local file
  while IFS= read -r file; do
    mkdir -p "$dest/$(dirname "$file")"
    cp -p "$file" "$dest/$file"
  done
}

list -name Cargo.toml -o -name Cargo.lock -o -path '*/.cargo/config*' \
  -o -name 'rust-toolchain*' | copy_exact

# A stub holds no code: a library stub is empty, and anything cargo runs or links as a
# program gets an empty main.
stub() {
  local file
  while IFS= read -r file; do
    mkdir -p "$dest/$(dirname "$file")"
    case $file in
      */src/lib.rs) : >"$dest/$file" ;;
      *) echo 'fn main() {}' >"$dest/$file" ;;
    esac
  done
}

shopt -s nullglob
while IFS= read -r manifest; do
  crate=$(dirname "$manifest")
  for file in "$crate"/build.rs "$crate"/src/lib.rs "$crate"/src/main.rs \
    "$crate"/src/bin/*.rs "$crate"/src/bin/*/main.rs \
    "$crate"/{benches,tests,examples}/*.rs "$crate"/{benches,tests,examples}/*/main.rs; do
    if [[ -f $file ]]; then
      echo "$file"
    fi
  done
done < <(list -name Cargo.toml) | stub
