# syntax=docker/dockerfile:1
# Build the static switchboard binary, then ship it on Node.js's slim Debian image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY config/crd/ config/crd/
COPY internal/ internal/
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=linux go build -trimpath \
      -ldflags "-s -w -X github.com/switchboard-io/switchboard/internal/version.Version=${VERSION}" \
      -o /out/switchboard ./cmd/switchboard

# Not distroless: the worker role needs node and npm. Function builds run npm install and load
# the bundle with node to read what it declares (functionrun.Describe), and the local function
# runtime runs every function in a node process. The binary itself stays static.
FROM node:22-bookworm-slim
COPY --from=build /out/switchboard /usr/local/bin/switchboard
# A non-root uid, the same as the chart's podSecurityContext (and the distroless image's before).
USER 65532:65532
# npm (function builds) keeps its cache under HOME; the uid has no home of its own.
ENV HOME=/tmp
EXPOSE 8080 8081 9090
ENTRYPOINT ["/usr/local/bin/switchboard"]
CMD ["all"]
