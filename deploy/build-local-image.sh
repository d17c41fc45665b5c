#!/bin/sh
# Build the edprf image without any container registry (sandboxes, air-gapped hosts).
#
#   deploy/build-local-image.sh engine     start a private dockerd (overlay2 or vfs storage, no iptables, no bridge)
#   deploy/build-local-image.sh base       debootstrap Debian bookworm + python3 into a folder, `docker import` it
#   deploy/build-local-image.sh image [docker build args...]
#                                          docker build -f deploy/Dockerfile --build-arg PYTHON_IMAGE=<local base>,
#                                          with the host's CA bundle and package index as build secrets
#   deploy/build-local-image.sh stop       stop the private dockerd started by `engine`
#
# Normal use builds on the official base (`docker build -f deploy/Dockerfile .`, PYTHON_IMAGE
# defaults to python:3.11-slim from Docker Hub). Containers of the private engine have no bridge:
# run them with `--network host` and bind every service to 127.0.0.1.
# Settings (environment): EDPRF_DOCKER_STATE (default /tmp/edprf-docker; this user's own, mode 0700: an
# existing one of another account's, or writable by others, is refused), EDPRF_STORAGE_DRIVER
# (default overlay2 where an overlay mount works, else vfs), EDPRF_BASE_TAG,
# EDPRF_IMAGE_TAG, DEBIAN_MIRROR, EDPRF_BUILD_CACHE_KEEP (build cache kept after `image`, default 2GB);
# EDPRF_BUILD_CA = the PEM bundle pip trusts in the build
# (default: PIP_CERT, pip's `cert` setting, SSL_CERT_FILE, /etc/ssl/certs/ca-certificates.crt;
# `none` for pip's own); the index: PIP_INDEX_URL / PIP_EXTRA_INDEX_URL / PIP_TRUSTED_HOST or
# pip's configuration files (http and https addresses only; file:// paths of the host are dropped).
# Measured (2026-11-23, 2 cores, PyPI through a TLS-intercepting proxy): engine 1 s, base 45-98 s,
# image 79-105 s from an empty cache (deploy/README.md, "Building the image").
set -eu

STATE=${EDPRF_DOCKER_STATE:-/tmp/edprf-docker}
SOCK="unix://$STATE/docker.sock"
BASE_TAG=${EDPRF_BASE_TAG:-edprf-local-base:bookworm}
IMAGE_TAG=${EDPRF_IMAGE_TAG:-edprf-fl:local}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE_KEEP=${EDPRF_BUILD_CACHE_KEEP:-2GB}
REPO=$(cd "$(dirname "$0")/.." && pwd)

docker_cli() { docker -H "$SOCK" "$@"; }

# The state directory holds dockerd's socket, data root and pid file and the rootfs that becomes the base
# image, all written as root: it must be this user's alone.  Another account that created a fixed path such
# as /tmp/edprf-docker first would own what root then puts there (it could swap the rootfs before `docker
# import`, or the pid file `stop` kills).  A missing directory is created with mode 0700 (missing parents
# too); an existing one must be a directory, not a link, owned by this user, writable by nobody else; one of
# this user's that others may read only (an earlier version of this script made it 0755) is narrowed to 0700.
# $1 = create: make it when missing (engine, base, image); check: only check one that exists (stop).
private_state() {
    if [ ! -e "$STATE" ] && [ ! -L "$STATE" ]; then
        [ "$1" = create ] || return 0
        (umask 077 && mkdir -p "$STATE") || exit 2  # mode 0700 from creation: never readable by others
    fi
    if [ -L "$STATE" ] || [ ! -d "$STATE" ]; then
        echo "EDPRF_DOCKER_STATE=$STATE: not a directory (or a symbolic link); remove it or set EDPRF_DOCKER_STATE" \
            "to a directory of your own" >&2
        exit 2
    fi
    owner=$(stat -c %u "$STATE") && mode=$(stat -c %a "$STATE") || exit 2
    if [ "$owner" != "$(id -u)" ] || [ $((0$mode & 022)) -ne 0 ]; then
        echo "EDPRF_DOCKER_STATE=$STATE: owned by uid $owner with mode $mode; it must be this user's (uid $(id -u))," \
            "writable by nobody else: another account may have created it to read or replace what this script" \
            "puts there (the engine's socket, the base image's rootfs); check and remove it, or set" \
            "EDPRF_DOCKER_STATE to a directory of your own (created here with mode 0700 when missing)" >&2
        exit 2
    fi
    [ "$mode" = 700 ] || chmod 700 "$STATE"
}

# The client that builds: BuildKit is required (secret mounts, COPY --chmod). Docker 23+ clients
# build with the buildx plugin; without it, the classic client of Debian's docker.io (20.10) has
# BuildKit built in (DOCKER_BUILDKIT=1).
build_cli() {
    if docker buildx version >/dev/null 2>&1; then echo docker; return; fi
    for c in docker /usr/bin/docker; do
        major=$("$c" version --format '{{.Client.Version}}' 2>/dev/null | cut -d. -f1) || true
        if [ -n "$major" ] && [ "$major" -lt 23 ] 2>/dev/null; then echo "$c"; return; fi
    done
    echo "no docker client that can build with BuildKit: install docker-buildx (Docker 23+) or docker.io" >&2
    exit 2
}

# A pip setting of the build host: its environment variable first, then pip's configuration files.
pip_setting() {
    var=PIP_$(printf '%s' "$1" | tr 'a-z-' 'A-Z_')
    eval "value=\${$var:-}"
    if [ -z "$value" ] && command -v python3 >/dev/null; then
        value=$(python3 -m pip config list 2>/dev/null \
            | sed -n -e "s/^global\.$1='\(.*\)'\$/\1/p" -e "s/^install\.$1='\(.*\)'\$/\1/p" | tail -n 1)
    fi
    printf '%s' "$value"
}

# Only addresses the build can reach: http(s) URLs (or host names for trusted-host).
reachable() {
    kept=""
    for item in $2; do
        case "$item" in
        http://* | https://*) kept="$kept $item" ;;
        *://*) echo "build: not passing the host's $1 $item (not reachable from the build)" >&2 ;;
        *) if [ "$1" = trusted-host ]; then kept="$kept $item"; else
            echo "build: not passing the host's $1 $item (not reachable from the build)" >&2; fi ;;
        esac
    done
    printf '%s' "${kept# }"
}

case "${1:-}" in
engine | base | image) private_state create ;;
stop) private_state check ;;
esac

case "${1:-}" in
engine)
    command -v dockerd >/dev/null || { echo "dockerd not installed: apt-get install docker.io" >&2; exit 2; }
    if docker_cli info >/dev/null 2>&1; then echo "engine already running: DOCKER_HOST=$SOCK"; exit 0; fi
    driver=${EDPRF_STORAGE_DRIVER:-}
    if [ -z "$driver" ]; then  # overlay2 where an overlay mount works here (not on overlayfs), else vfs
        probe="$STATE/overlay-probe"
        rm -rf "$probe" && mkdir -p "$probe/lower" "$probe/upper" "$probe/work" "$probe/merged"
        if mount -t overlay overlay -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" \
            "$probe/merged" 2>/dev/null; then
            umount "$probe/merged"
            driver=overlay2
        else
            driver=vfs
        fi
        rm -rf "$probe"
    fi
    dockerd --storage-driver "$driver" --iptables=false --bridge=none --data-root "$STATE/root" \
        --exec-root "$STATE/exec" -H "$SOCK" --pidfile "$STATE/docker.pid" >"$STATE/dockerd.log" 2>&1 &
    pid=$!
    i=0
    until docker_cli info >/dev/null 2>&1; do
        i=$((i + 1))
        if ! kill -0 "$pid" 2>/dev/null || [ "$i" -gt 60 ]; then
            echo "dockerd did not start; last lines of $STATE/dockerd.log:" >&2
            tail -n 8 "$STATE/dockerd.log" >&2
            kill "$pid" 2>/dev/null || true
            exit 1
        fi
        sleep 1
    done
    echo "engine running ($driver storage): DOCKER_HOST=$SOCK"
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
    shift
    cli=$(build_cli)
    secrets=""
    ca=${EDPRF_BUILD_CA:-}
    if [ -z "$ca" ]; then
        for candidate in "$(pip_setting cert)" "${SSL_CERT_FILE:-}" /etc/ssl/certs/ca-certificates.crt; do
            if [ -n "$candidate" ] && [ -s "$candidate" ]; then ca=$candidate; break; fi
        done
    fi
    if [ -n "$ca" ] && [ "$ca" != none ]; then
        [ -s "$ca" ] || { echo "EDPRF_BUILD_CA=$ca: no such file" >&2; exit 2; }
        secrets="--secret id=ca-bundle,src=$ca"
        echo "build: pip trusts $ca"
    fi
    conf="$STATE/pip-build.conf"
    (umask 077; printf '[global]\n' >"$conf")
    trap 'rm -f "$conf"' EXIT
    for key in index-url extra-index-url trusted-host; do
        value=$(reachable "$key" "$(pip_setting "$key")")
        if [ -n "$value" ]; then printf '%s = %s\n' "$key" "$value" >>"$conf"; echo "build: pip $key (from the host)"; fi
    done
    secrets="$secrets --secret id=pip-conf,src=$conf"
    # shellcheck disable=SC2086  # $secrets is a list of words
    DOCKER_BUILDKIT=1 "$cli" -H "$SOCK" build --network host -f "$REPO/deploy/Dockerfile" \
        --build-arg "PYTHON_IMAGE=$BASE_TAG" $secrets -t "$IMAGE_TAG" "$@" "$REPO"
    echo "image: $IMAGE_TAG"
    # every build from a changed context adds its layers (about 1.4 GB) to the build cache: keep it bounded
    docker_cli builder prune --force --keep-storage "$CACHE_KEEP" >/dev/null
    echo "build cache pruned to at most $CACHE_KEEP"
    ;;
stop)
    if [ ! -f "$STATE/docker.pid" ] || ! kill -0 "$(cat "$STATE/docker.pid")" 2>/dev/null; then
        echo "engine not running"; exit 0
    fi
    pid=$(cat "$STATE/docker.pid")
    kill "$pid"
    i=0
    while kill -0 "$pid" 2>/dev/null; do  # dockerd stops its containers first (10 s each at most)
        i=$((i + 1))
        if [ "$i" -gt 60 ]; then echo "dockerd $pid still running after 60 s" >&2; exit 1; fi
        sleep 1
    done
    # what dockerd may leave mounted under its state (the host network namespace's bind mount)
    grep -o " $STATE/[^ ]*" /proc/mounts 2>/dev/null | sort -r | while read -r m; do umount "$m" || true; done
    echo "engine stopped"
    ;;
*)
    sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
