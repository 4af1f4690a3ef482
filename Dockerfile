# syntax=docker/dockerfile:1
# tabled as a container image that stands in for Azurite's
# (mcr.microsoft.com/azure-storage/azurite): the same default command,
# volume and ports, so "docker run IMAGE" and
# "docker run IMAGE azurite-table --tableHost 0.0.0.0" both serve the Table
# service on 10002. See doc/containers.md.
#
#   docker build -t tabled .
#   docker run --rm -p 10002:10002 -v tabled-data:/data tabled

# Build stage: the release build, installed into /out (no libsystemd: a
# container has no service manager to notify).
FROM debian:12 AS build
ARG DEBIAN_FRONTEND=noninteractive
# The build-only packages (a subset of autogen.sh's list: the test-only
# ones, a PostgreSQL server, Node.js and the Python SDK, are left out).
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libevent-dev libssl-dev libyajl-dev libexpat1-dev libleveldb-dev libpq-dev \
      node-llhttp autoconf automake libtool pkg-config make gcc \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN autoreconf -fi \
 && ./configure --prefix=/usr/local --sysconfdir=/etc --without-libsystemd \
 && make -j"$(nproc)" \
 && make install-strip DESTDIR=/out

# Runtime stage: the binary, its links and man pages, the postgres
# backend's module, and the shared libraries "ldd tabled" and the module
# name, with OpenSSL and libevent_openssl, which tabled opens with dlopen
# when first needed (tests/integration/test_container.py checks
# this list against the build).
FROM debian:12-slim
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libevent-core-2.1-7 libevent-openssl-2.1-7 libssl3 libyajl2 libexpat1 \
      libleveldb1d libpq5 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /data --no-create-home tabled \
 && mkdir -p /data && chown tabled:tabled /data
COPY --from=build /out/usr/local/bin/ /usr/local/bin/
COPY --from=build /out/usr/local/lib/tabled/ /usr/local/lib/tabled/
COPY --from=build /out/usr/local/share/man/ /usr/local/share/man/
COPY --from=build /out/etc/tabled/ /etc/tabled/
# The working directory is the volume: azurite-table without -l keeps its
# data in the current directory, as Azurite does, so it lands in /data too.
WORKDIR /data
VOLUME ["/data"]
USER tabled
# 10000 and 10001 (Blob, Queue): placeholders that answer that only the
# Table service is served; 10002: the Table service.
EXPOSE 10000 10001 10002
# No HEALTHCHECK: the slim image has no HTTP client, the port depends on the
# command line, and test frameworks wait for the readiness lines instead.
CMD ["azurite", "-l", "/data", "--blobHost", "0.0.0.0", "--queueHost", "0.0.0.0", "--tableHost", "0.0.0.0"]
