# The cluster's bus: nats-server from Debian's package (docker-compose.cluster.yml).
#
# No registry is reachable here, so it starts from the local Debian base that
# docker/build-base.sh makes; with a registry, BASE_IMAGE=debian:bookworm-slim does as well.
# The build context is docker/. Written for the classic builder (no BuildKit syntax).
ARG BASE_IMAGE=mmo-base:bookworm
FROM ${BASE_IMAGE}
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nats-server \
    && rm -rf /var/lib/apt/lists/*
COPY http-probe.sh /usr/local/bin/http-probe
# The package made the `nats` user; the server needs no root. Core NATS only: the cluster
# does not use JetStream, so nothing is kept on disk.
USER nats
EXPOSE 4222 8222
# Port 8222 is the monitoring endpoint: its /healthz answers 200 once clients can connect.
HEALTHCHECK --interval=2s --timeout=6s --retries=5 --start-period=10s \
    CMD ["http-probe", "127.0.0.1", "8222", "/healthz"]
CMD ["nats-server", "--addr", "0.0.0.0", "--port", "4222", "--http_port", "8222"]
