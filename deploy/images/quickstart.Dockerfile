# The quick start's image (kube-elector/examples/quickstart.rs), as
# deploy/quickstart.yaml runs it. From the repository root:
#
#   docker build -f deploy/images/quickstart.Dockerfile -t quickstart:0.1.0 .
#
# rustls-tls gives the binary a TLS stack for the API server (the library leaves
# the choice to the binary). The runtime image runs as the numeric user 65532 and
# the program writes no file, so the manifest's securityContext (runAsNonRoot,
# readOnlyRootFilesystem, no capabilities) holds as it is.
FROM rust:1.89-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p kube-elector --example quickstart \
      --features ops-http,rustls-tls \
 && cp target/release/examples/quickstart /quickstart

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /quickstart /usr/local/bin/quickstart
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/quickstart"]
