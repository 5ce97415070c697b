# The node image for a machine that reaches an image registry: Valkey 8.0 plus
# the trafikey module, compiled from native/ in a build stage.
#
#   docker build -f docker/node.Dockerfile -t echomq-node:local .                     # native (default)
#   docker build -f docker/node.Dockerfile --target scripted -t echomq-node:local .   # no module
#
# Without a registry, docker/build-offline.sh makes the same image (same paths,
# same labels) from this machine's own valkey-server.
#
# Pinned: valkey/valkey:8 floats to the newest 8.x. 8.0.4 is the last 8.0 patch
# on bookworm (Debian 12, glibc 2.36, the machine the kit is tested on); later
# 8.0 patches are on trixie: pass both build args to move, e.g.
#   --build-arg VALKEY_IMAGE=valkey/valkey:8.0.11-trixie --build-arg BUILD_IMAGE=debian:trixie-slim
# For a reproducible classroom, pin the digest too (VALKEY_IMAGE=...@sha256:<digest>).
ARG VALKEY_IMAGE=valkey/valkey:8.0.4-bookworm
# the module must be compiled against the runtime's libc and no newer one:
# a bookworm runtime gets a bookworm compiler (glibc 2.36)
ARG BUILD_IMAGE=debian:bookworm-slim

FROM ${BUILD_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev make \
 && rm -rf /var/lib/apt/lists/*
COPY native/ /src/native/
# the Makefile uses the kit's own flags (native.CFLAGS); a stale .so from the host is rebuilt
RUN make -C /src/native clean trafikey.so

FROM ${VALKEY_IMAGE} AS scripted
# the base's entrypoint drops privileges with gosu and prepends valkey-server;
# the kit passes one argument (its config file), so run the server directly
# as the image's valkey user (uid 999), exactly as the offline image runs it
RUN mkdir -p /etc/echomq /usr/local/lib/valkey
USER 999:999
WORKDIR /data
ENTRYPOINT ["/usr/local/bin/valkey-server"]
LABEL org.echomq.module=none org.echomq.route=registry

FROM scripted AS native
# make leaves it 0755 and COPY keeps the mode: uid 999 must read it, and the server
# refuses a module without its execute bit (no --chmod: the legacy builder lacks it)
COPY --from=build /src/native/trafikey.so /usr/local/lib/valkey/trafikey.so
LABEL org.echomq.module=trafikey
