# The server and the load-test swarm in one image (see docker-compose.yml).
#
# No container registry is reachable here, so the stages start from images this project
# makes itself: run docker/build-base.sh first (docker/run-compose.sh does). The file is
# written for the classic builder, which docker-compose 1.x uses: no BuildKit syntax.
#
# The dependencies compile in a layer of their own, keyed only on the manifests and
# Cargo.lock (docker/skeleton.sh), so a change to a .rs file reuses every compiled crate
# from crates.io and rebuilds just the workspace's own crates.
ARG RUST_IMAGE=mmo-rust:1.95
ARG BASE_IMAGE=mmo-base:bookworm

# The manifests and empty target stubs; this stage reruns on any change, but its output
# changes only when a manifest or Cargo.lock does.
FROM ${RUST_IMAGE} AS skeleton
WORKDIR /src
COPY . .
RUN bash docker/skeleton.sh /src /skeleton

FROM ${RUST_IMAGE} AS build
WORKDIR /src
ENV CARGO_TERM_COLOR=never CARGO_INCREMENTAL=0
COPY --from=skeleton /skeleton/ ./
# Downloads from crates.io (the build's network reaches it) and compiles every dependency
# of the two binaries, against stubs of the workspace's own crates.
RUN cargo build --release --locked -p server -p loadtest
COPY . .
# The copied sources may be older than the stub builds; touching them makes cargo rebuild
# the workspace's crates from the real code instead of keeping the stubs.
RUN find . -path ./target -prune -o -name '*.rs' -exec touch {} + \
    && cargo build --release --locked -p server -p loadtest

FROM ${BASE_IMAGE}
COPY --from=build /src/target/release/server /src/target/release/loadtest /usr/local/bin/
COPY docker/http-probe.sh /usr/local/bin/http-probe
COPY loadtest/bench-slo.toml /opt/mmo/bench-slo.toml
COPY maps /opt/mmo/maps
# Neither program needs root. /run/mmo is where the server writes its certificate
# fingerprint for the swarm, /var/lib/mmo where it keeps its characters; a fresh named
# volume mounted on either takes this owner.
RUN useradd --system --uid 10001 --no-create-home --home-dir /opt/mmo mmo \
    && mkdir -p /run/mmo /var/lib/mmo && chown mmo:mmo /run/mmo /var/lib/mmo
USER mmo
WORKDIR /opt/mmo
# glibc's allocator asks the kernel for transparent huge pages (when its THP mode is
# `madvise` or `always`): each tick the snapshot workers read every client's view, and
# with 2 MiB pages they miss the TLB less (README, "Game server"; docs/benchmarks.md).
ENV GLIBC_TUNABLES=glibc.malloc.hugetlb=1
