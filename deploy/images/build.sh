#!/usr/bin/env bash
# Build the three base images from Debian packages, for a Docker host that cannot pull from
# a registry (no Docker Hub): a Debian bookworm root file system made with debootstrap and
# imported with `docker import`, then Python 3.11, PostgreSQL 15 and Redis 7 on top of it.
#
#   deploy/images/build.sh [PREFIX]     (PREFIX defaults to graphruntime-local)
#
# Makes PREFIX/debian:bookworm, PREFIX/python:3.11-bookworm, PREFIX/postgres:15-bookworm and
# PREFIX/redis:7-bookworm. Needs root (debootstrap), debootstrap and a Debian mirror
# (DEBIAN_MIRROR, default deb.debian.org). An existing PREFIX/debian:bookworm is reused;
# `FORCE=1` rebuilds it. The other three are rebuilt each time (cached layers make that quick).
# EXTRA_CA_CERTS: a directory of *.crt files the Python image should trust besides Debian's
# (a TLS-intercepting proxy between the build and PyPI); they end up in every image built
# from it, so use it for local images only.
set -euo pipefail

prefix=${1:-graphruntime-local}
suite=bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security_mirror=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
base="$prefix/debian:$suite"

if [[ ${FORCE:-0} == 1 ]] || ! docker image inspect "$base" >/dev/null 2>&1; then
    rootfs=$(mktemp -d /tmp/graphruntime-rootfs.XXXXXX)
    trap 'rm -rf "$rootfs"' EXIT
    echo "==> debootstrap $suite into $rootfs"
    debootstrap --variant=minbase "$suite" "$rootfs" "$mirror"
    cat >"$rootfs/etc/apt/sources.list" <<SOURCES
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security_mirror $suite-security main
SOURCES
    # As Debian's official images do: no service starts inside a build, no recommends,
    # no package caches left in layers.
    printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
    chmod 755 "$rootfs/usr/sbin/policy-rc.d"
    printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
        >"$rootfs/etc/apt/apt.conf.d/90container"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    echo "==> docker import $base"
    tar -C "$rootfs" -c . | docker import --change 'CMD ["bash"]' - "$base"
fi

context=$(mktemp -d /tmp/graphruntime-python-image.XXXXXX)
trap 'rm -rf "$context" ${rootfs:+"$rootfs"}' EXIT
cp "$here/python/Dockerfile" "$context/"
mkdir "$context/extra-ca"
if [[ -n ${EXTRA_CA_CERTS:-} ]]; then
    cp "$EXTRA_CA_CERTS"/*.crt "$context/extra-ca/"
fi

for image in python:3.11 postgres:15 redis:7; do
    name=${image%%:*}
    dir="$here/$name"
    [[ $name == python ]] && dir=$context
    echo "==> docker build $prefix/$image-$suite"
    # The host network: apt and pip reach their mirrors exactly as this host does.
    docker build --network host --build-arg "BASE=$base" -t "$prefix/$image-$suite" "$dir"
done
