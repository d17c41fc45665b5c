#!/bin/sh
# Build the edprf image without any container registry (sandboxes, air-gapped hosts).
#
#   deploy/build-local-image.sh engine     start a private dockerd (vfs storage, no iptables, no bridge)
#   deploy/build-local-image.sh base       debootstrap Debian bookworm + python3 into a folder, `docker import` it
#   deploy/build-local-image.sh image      docker build -f deploy/Dockerfile --build-arg PYTHON_IMAGE=<local base>
#   deploy/build-local-image.sh stop       stop the private dockerd started by `engine`
#
# Normal use builds on the official base (`docker build -f deploy/Dockerfile .`, PYTHON_IMAGE
# defaults to python:3.11-slim from Docker Hub). Containers of the private engine have no bridge:
# run them with `--network host` and bind every service to 127.0.0.1.
# Verified in the H5 sandbox (2026-11-23): `engine` starts (dockerd 20.10.24, vfs) and an imported
# image runs with --network host; `base` takes ~2 min; `image` fails at pip (TLS proxy CA; see deploy/README.md).
set -eu

STATE=${EDPRF_DOCKER_STATE:-/tmp/edprf-docker}
SOCK="unix://$STATE/docker.sock"
BASE_TAG=${EDPRF_BASE_TAG:-edprf-local-base:bookworm}
IMAGE_TAG=${EDPRF_IMAGE_TAG:-edprf-fl:local}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
REPO=$(cd "$(dirname "$0")/.." && pwd)

docker_cli() { docker -H "$SOCK" "$@"; }

case "${1:-}" in
engine)
    command -v dockerd >/dev/null || { echo "dockerd not installed: apt-get install docker.io" >&2; exit 2; }
    mkdir -p "$STATE"
    if docker_cli info >/dev/null 2>&1; then echo "engine already running: DOCKER_HOST=$SOCK"; exit 0; fi
    dockerd --storage-driver vfs --iptables=false --bridge=none --data-root "$STATE/root" \
        --exec-root "$STATE/exec" -H "$SOCK" --pidfile "$STATE/docker.pid" >"$STATE/dockerd.log" 2>&1 &
    i=0
    until docker_cli info >/dev/null 2>&1; do
        i=$((i + 1))
        if [ "$i" -gt 60 ]; then echo "dockerd did not start; see $STATE/dockerd.log:" >&2; tail -5 "$STATE/dockerd.log" >&2; exit 1; fi
        sleep 1
    done
    echo "engine running: DOCKER_HOST=$SOCK"
    ;;
base)
    command -v debootstrap >/dev/null || { echo "debootstrap not installed: apt-get install debootstrap" >&2; exit 2; }
    rootfs="$STATE/rootfs"
    rm -rf "$rootfs"
    debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates bookworm "$rootfs" "$MIRROR"
    ln -sf /usr/bin/python3 "$rootfs/usr/local/bin/python"
    tar -C "$rootfs" -c . | docker_cli import --change 'CMD ["/bin/bash"]' - "$BASE_TAG"
    echo "base image: $BASE_TAG"
    ;;
image)
    docker_cli build --network host -f "$REPO/deploy/Dockerfile" --build-arg "PYTHON_IMAGE=$BASE_TAG" \
        -t "$IMAGE_TAG" "$REPO"
    echo "image: $IMAGE_TAG"
    ;;
stop)
    [ -f "$STATE/docker.pid" ] && kill "$(cat "$STATE/docker.pid")" && echo "engine stopped"
    ;;
*)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
