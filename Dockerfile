# syntax=docker/dockerfile:1
#
# verity-mcp (the gating MCP proxy) and verity (the operator's command for
# its logs), built static (CGO_ENABLED=0: the SQLite driver is pure Go) and
# run as a non-root user on a base with nothing else in it.
#
#   docker build -t verity .
#   docker run --rm -v verity-log:/var/lib/verity -v "$PWD/config:/etc/verity:ro" \
#     -p 8080:8080 verity -config /etc/verity/gateway.json \
#     -log /var/lib/verity/gate.log -http :8080
#   docker run --rm -v verity-log:/var/lib/verity --entrypoint verity verity \
#     verify /var/lib/verity/gate.log
#
# TestStaticBuild (examples/verity) builds both commands as this file does
# and checks that the binaries are static.

ARG GO_VERSION=1.26
FROM golang:${GO_VERSION} AS build
WORKDIR /src
# The modules first, so that a change of source reuses the download.
COPY go.mod go.sum ./
COPY kernel/toolgate/mcp/go.mod kernel/toolgate/mcp/go.sum kernel/toolgate/mcp/
RUN go mod download && cd kernel/toolgate/mcp && go mod download
COPY . .
ENV CGO_ENABLED=0
RUN go build -trimpath -tags sql -ldflags="-s -w" -o /out/verity ./examples/verity \
 && cd kernel/toolgate/mcp \
 && go build -trimpath -ldflags="-s -w" -o /out/verity-mcp ./cmd/verity-mcp
# The log directory, owned by the user the image runs as (distroless's
# nonroot, 65532), so that a named volume mounted there starts writable.
RUN mkdir -p /out/var/lib/verity

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/verity /out/verity-mcp /usr/local/bin/
COPY --from=build --chown=65532:65532 /out/var/lib/verity /var/lib/verity
USER 65532:65532
# The log (and pins, approvals) are written under /var/lib/verity; the
# gateway file, policy and secrets are read from /etc/verity (mount it
# read-only).
VOLUME ["/var/lib/verity", "/etc/verity"]
WORKDIR /var/lib/verity
ENTRYPOINT ["/usr/local/bin/verity-mcp"]
CMD ["-h"]
