#!/usr/bin/env bash
# Builds the two local base images the Dockerfile starts from, because no container
# registry is reachable from here and the project makes its own images:
#
#   mmo-base:bookworm   Debian 12 minbase made by debootstrap: the runtime image's base.
#   mmo-rust:<X.Y>      the same plus gcc and libc6-dev (ring compiles C) and a copy of
#                       this machine's Rust toolchain (rustc, cargo, the std library).
#
# Each image is skipped when it already exists, so running this again costs nothing;
# FORCE=1 rebuilds both. RUSTC names the rustc whose toolchain is copied (default: the
# one on PATH); the rust image's tag is that compiler's major.minor version, and the
# Dockerfile's RUST_IMAGE argument must name it.
#
# Needs root (debootstrap, chroot), Docker, and Debian's package mirror; installs
# debootstrap with apt-get when it is missing.
set -euo pipefail

readonly SUITE=bookworm
readonly MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
readonly BASE_IMAGE=mmo-base:$SUITE
readonly RUSTC=${RUSTC:-rustc}
# Inside the rust image the toolchain lives here, and cargo keeps its registry cache here.
readonly RUST_PREFIX=/usr/local/rust
readonly CARGO_HOME_IN_IMAGE=/usr/local/cargo
readonly IMAGE_PATH=$RUST_PREFIX/bin:$CARGO_HOME_IN_IMAGE/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

log() { printf '==> %s\n' "$*" >&2; }

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

wanted() {
  if [[ ${FORCE:-0} == 1 ]] || ! image_exists "$1"; then
    return 0
  fi
  log "$1 exists; skipped (FORCE=1 rebuilds it)"
  return 1
}

need_debootstrap() {
  if command -v debootstrap >/dev/null; then
    return
  fi
  log "installing debootstrap"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
}

# Makes a minbase root file system in $1 with the extra packages $2 (comma-separated,
# may be empty), then drops what an image does not need: apt's lists and the package
# cache (the debs stay in the shared cache directory for the next run).
make_rootfs() {
  local root=$1 include=$2
  local args=(--variant=minbase "--cache-dir=$WORK/debs")
  if [[ -n $include ]]; then
    args+=("--include=$include")
  fi
  log "debootstrap $SUITE into $root${include:+ (+ $include)}"
  debootstrap "${args[@]}" "$SUITE" "$root" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 || {
    tail -n 30 "$WORK/debootstrap.log" >&2
    return 1
  }
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb \
    "$root"/var/log/* "$root"/tmp/*
}

# Imports the root file system $1 as image $2; the remaining arguments are extra
# Dockerfile instructions (ENV, WORKDIR) baked into the image's config.
import_rootfs() {
  local root=$1 tag=$2
  shift 2
  local changes=(--change "ENV PATH=$IMAGE_PATH" --change 'ENV LANG=C.UTF-8' --change 'CMD ["bash"]')
  local change
  for change in "$@"; do
    changes+=(--change "$change")
  done
  log "docker import $tag"
  tar --numeric-owner -C "$root" -c . | docker import "${changes[@]}" - "$tag" >/dev/null
}

# Copies the compiler, cargo and the host's standard library (not the docs, not the
# extra tools) from the sysroot of $RUSTC into $1$RUST_PREFIX.
copy_toolchain() {
  local root=$1 sysroot host
  sysroot=$("$RUSTC" --print sysroot)
  host=$("$RUSTC" -vV | sed -n 's/^host: //p')
  log "copying the toolchain from $sysroot ($host)"
  local dest=$root$RUST_PREFIX
  mkdir -p "$dest/bin" "$dest/lib/rustlib" "$root$CARGO_HOME_IN_IMAGE"
  cp -a "$sysroot"/bin/{cargo,rustc,rustdoc} "$dest/bin/"
  cp -a "$sysroot"/lib/*.so* "$dest/lib/"
  cp -a "$sysroot/lib/rustlib/$host" "$dest/lib/rustlib/"
  cp -a "$sysroot"/lib/rustlib/{etc,components,rust-installer-version} "$dest/lib/rustlib/" 2>/dev/null || true
}

main() {
  command -v docker >/dev/null || { echo "docker is not installed" >&2; exit 1; }
  local rust_version rust_image
  rust_version=$("$RUSTC" --version | awk '{print $2}')
  rust_image=mmo-rust:${rust_version%.*}

  local need_base=0 need_rust=0
  if wanted "$BASE_IMAGE"; then need_base=1; fi
  if wanted "$rust_image"; then need_rust=1; fi
  if ((need_base + need_rust == 0)); then
    return
  fi

  need_debootstrap
  WORK=$(mktemp -d /var/tmp/mmo-base.XXXXXX)
  # The root file systems hold device nodes and root-owned files: only rm as root undoes them.
  trap 'rm -rf "$WORK"' EXIT
  mkdir -p "$WORK/debs"

  if ((need_base)); then
    make_rootfs "$WORK/base" ""
    import_rootfs "$WORK/base" "$BASE_IMAGE"
    rm -rf "$WORK/base"
  fi
  if ((need_rust)); then
    make_rootfs "$WORK/rust" "gcc,libc6-dev,ca-certificates"
    copy_toolchain "$WORK/rust"
    import_rootfs "$WORK/rust" "$rust_image" "ENV CARGO_HOME=$CARGO_HOME_IN_IMAGE"
  fi
  docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E '^mmo-(base|rust):' >&2
}

main "$@"
