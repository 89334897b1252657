#!/usr/bin/env bash
# Builds the two local base images the Dockerfile starts from, because no container
# registry is reachable from here and the project makes its own images:
#
#   mmo-base:bookworm        Debian 12 minbase made by debootstrap: the runtime's base.
#   mmo-rust-toolchain:X.Y   the same plus gcc and libc6-dev (ring compiles C) and a copy
#                            of this machine's Rust toolchain (rustc, cargo, the std
#                            library).
#   mmo-rust:X.Y             that, trusting also the certificate authorities this host
#                            added in /usr/local/share/ca-certificates: the build stages
#                            download crates from crates.io, and where the host reaches it
#                            through a TLS-inspecting proxy the build must trust the same
#                            authority. A thin layer, remade in seconds when they change.
#
# `--runtime-only` makes mmo-base:bookworm alone: all that docker/build-prebuilt.sh and the
# nats and PostgreSQL images need, when the binaries are built outside Docker (CI does).
#
# Each image is skipped when it already exists (mmo-rust: with the same authorities), so
# running this again costs nothing; FORCE=1 rebuilds all three. RUSTC names the rustc
# whose toolchain is copied (default: the one on PATH); the rust images' tag is that
# compiler's major.minor version, and the Dockerfile's RUST_IMAGE argument must name it.
#
# Needs root (debootstrap, chroot), Docker, and Debian's package mirror; installs
# debootstrap with apt-get when it is missing.
set -euo pipefail

readonly SUITE=bookworm
readonly MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
readonly BASE_IMAGE=mmo-base:$SUITE
readonly RUSTC=${RUSTC:-rustc}
readonly HOST_CA_DIR=/usr/local/share/ca-certificates
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

# Prints a digest of the host's added certificate authorities ("none" when there are none).
host_ca_digest() {
  local files
  files=$(find "$HOST_CA_DIR" -name '*.crt' -type f 2>/dev/null | sort)
  if [[ -z $files ]]; then
    echo none
    return
  fi
  # shellcheck disable=SC2086 # one path per line, none with spaces
  cat $files | sha256sum | cut -c1-16
}

# Builds image $2 from $1 with the host's added authorities installed and their digest $3
# as a label, so the next run can tell whether they changed.
add_host_cas() {
  local from=$1 tag=$2 digest=$3 ctx
  ctx=$(mktemp -d)
  printf 'FROM %s\n' "$from" >"$ctx/Dockerfile"
  if [[ $digest != none ]]; then
    cp -a "$HOST_CA_DIR" "$ctx/ca"
    printf '%s\n' 'COPY ca/ /usr/local/share/ca-certificates/' \
      'RUN update-ca-certificates >/dev/null' >>"$ctx/Dockerfile"
  fi
  printf 'LABEL mmo.host-ca=%s\n' "$digest" >>"$ctx/Dockerfile"
  log "docker build $tag (host certificate authorities: $digest)"
  docker build -q -t "$tag" "$ctx" >/dev/null
  rm -rf "$ctx"
}

main() {
  command -v docker >/dev/null || { echo "docker is not installed" >&2; exit 1; }
  local runtime_only=0
  case ${1:-} in
    --runtime-only) runtime_only=1 ;;
    '') ;;
    *) echo "usage: docker/build-base.sh [--runtime-only]" >&2; exit 2 ;;
  esac
  local rust_version toolchain_image rust_image digest
  rust_version=$("$RUSTC" --version | awk '{print $2}')
  toolchain_image=mmo-rust-toolchain:${rust_version%.*}
  rust_image=mmo-rust:${rust_version%.*}
  digest=$(host_ca_digest)

  local need_base=0 need_toolchain=0
  if wanted "$BASE_IMAGE"; then need_base=1; fi
  if ((runtime_only)); then
    :
  elif wanted "$toolchain_image"; then
    need_toolchain=1
  fi
  if ((need_base + need_toolchain)); then
    need_debootstrap
    WORK=$(mktemp -d /var/tmp/mmo-base.XXXXXX)
    # The root file systems hold root-owned files and device nodes: only root removes them.
    trap 'rm -rf "$WORK"' EXIT
    mkdir -p "$WORK/debs"
  fi
  if ((need_base)); then
    make_rootfs "$WORK/base" ""
    import_rootfs "$WORK/base" "$BASE_IMAGE"
    rm -rf "$WORK/base"
  fi
  if ((need_toolchain)); then
    make_rootfs "$WORK/rust" "gcc,libc6-dev,ca-certificates"
    copy_toolchain "$WORK/rust"
    import_rootfs "$WORK/rust" "$toolchain_image" "ENV CARGO_HOME=$CARGO_HOME_IN_IMAGE"
    rm -rf "$WORK/rust"
  fi

  if ((runtime_only)); then
    docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E "^$BASE_IMAGE " >&2
    return
  fi
  local current_digest
  current_digest=$(docker image inspect -f '{{index .Config.Labels "mmo.host-ca"}}' "$rust_image" 2>/dev/null || true)
  if ((need_toolchain)) || [[ ${FORCE:-0} == 1 || $current_digest != "$digest" ]]; then
    add_host_cas "$toolchain_image" "$rust_image" "$digest"
  else
    log "$rust_image exists with the host's certificate authorities; skipped"
  fi
  docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E '^mmo-(base|rust|rust-toolchain):' >&2
}

main "$@"
