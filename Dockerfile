# The server and the load-test swarm in one image (see docker-compose.yml).
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p server -p loadtest

FROM debian:bookworm-slim
COPY --from=build /src/target/release/server /usr/local/bin/server
COPY --from=build /src/target/release/loadtest /usr/local/bin/loadtest
COPY --from=build /src/loadtest/bench-slo.toml /opt/mmo/bench-slo.toml
COPY --from=build /src/maps /opt/mmo/maps
WORKDIR /opt/mmo
