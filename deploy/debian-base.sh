#!/bin/sh
# A Debian bookworm base image made from Debian's own packages (debootstrap), for machines that cannot pull
# one from a registry. Prints the image's name. Needs root, debootstrap and buildah.
set -eu
name="${1:-localhost/debian-base:bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
if buildah inspect --type image "$name" >/dev/null 2>&1; then echo "$name"; exit 0; fi
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase bookworm "$root" "$mirror" >&2
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
container="$(buildah from scratch)"
mount="$(buildah mount "$container")"
cp -a "$root"/. "$mount"/
buildah umount "$container" >/dev/null
buildah config --env PATH=/usr/sbin:/usr/bin:/sbin:/bin --cmd /bin/sh "$container"
buildah commit --quiet --rm "$container" "$name" >/dev/null
echo "$name"
