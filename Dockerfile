# The mcpgen image: a static binary in an empty image, run as a non-root
# user, with no shell. Build it from a binary built first, which needs no
# image to be pulled:
#
#   CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o mcpgen ./cmd/mcpgen
#   docker build -t mcpgen .
#
# (docs/kubernetes.md has a variant that builds the binary in a Go image,
# and how to add Node or Python for servers that need them.)
FROM scratch

# /tmp and /workspace, owned by the user: the state and the control
# socket go to /tmp, the workspace's files to /workspace. With a read-only
# root filesystem (Kubernetes), mount volumes on both.
COPY --chown=65532:65532 deploy/image/rootfs/ /
COPY mcpgen /mcpgen

# No /etc/passwd: the user is a number, and these name what a login would.
ENV HOME=/tmp \
    USER=mcpgen \
    MCPGEN_STATE_DIR=/tmp/mcpgen/state \
    MCPGEN_RUNTIME_DIR=/tmp/mcpgen/run
USER 65532:65532
WORKDIR /workspace

# As PID 1, mcpgen runs itself as init's child: init reaps every orphan and
# passes SIGTERM and SIGINT on (see docs/kubernetes.md).
ENTRYPOINT ["/mcpgen"]
CMD ["--help"]
