# The cluster's character store: PostgreSQL 15 from Debian's packages
# (docker-compose.cluster.yml). At its first start on an empty data volume it creates the
# role and database `mmo` (docker/postgres-entrypoint.sh).
#
# No registry is reachable here, so it starts from the local Debian base that
# docker/build-base.sh makes; with a registry, BASE_IMAGE=debian:bookworm-slim does as well.
# The build context is docker/. Written for the classic builder (no BuildKit syntax).
ARG BASE_IMAGE=mmo-base:bookworm
FROM ${BASE_IMAGE}
# postgresql-common would create and start a cluster of its own at install time; the
# entrypoint makes the only one, in the volume.
RUN mkdir -p /etc/postgresql-common \
    && echo 'create_main_cluster = false' >/etc/postgresql-common/createcluster.conf \
    && apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/postgresql/data /run/postgresql \
    && chown postgres:postgres /var/lib/postgresql/data /run/postgresql \
    && chmod 700 /var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
# A fresh named volume mounted here takes the directory's owner, postgres.
VOLUME /var/lib/postgresql/data
USER postgres
EXPOSE 5432
# pg_isready over TCP as the cluster connects; the entrypoint opens TCP only once the
# database `mmo` exists.
HEALTHCHECK --interval=2s --timeout=5s --retries=10 --start-period=30s \
    CMD ["pg_isready", "--quiet", "--host=127.0.0.1", "--username=mmo", "--dbname=mmo"]
# SIGINT is PostgreSQL's fast shutdown: sessions are ended instead of waited for.
STOPSIGNAL SIGINT
ENTRYPOINT ["postgres-entrypoint"]
