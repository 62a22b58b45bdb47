# syntax=docker/dockerfile:1
# Build the static switchboard binary, then ship it alone on a distroless base.
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

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/switchboard /usr/local/bin/switchboard
USER 65532:65532
EXPOSE 8080 8081 9090
ENTRYPOINT ["/usr/local/bin/switchboard"]
CMD ["all"]
