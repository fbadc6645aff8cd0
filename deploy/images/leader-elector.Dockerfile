# The leader-elector sidecar's image, as deploy/sidecar.yaml and
# deploy/run-mode.yaml run it. From the repository root:
#
#   docker build -f deploy/images/leader-elector.Dockerfile -t leader-elector:0.1.0 .
#
# The runtime image has no shell and no package manager, and runs as the numeric
# user 65532: the manifests' securityContext (runAsNonRoot, readOnlyRootFilesystem,
# no capabilities) holds as it is, since the kubelet can check a numeric user and
# the sidecar writes no file. For run mode, build your program's image FROM this
# one (or copy /usr/local/bin/leader-elector into yours, which then needs a
# numeric USER too).
FROM rust:1.89-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p leader-elector \
 && cp target/release/leader-elector /leader-elector

# glibc and libgcc (the binary is linked against them), CA certificates, a
# numeric non-root user.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /leader-elector /usr/local/bin/leader-elector
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/leader-elector"]
