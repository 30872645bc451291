#!/usr/bin/env bash
# Builds peakhour's container image on this machine, with no registry: a
# Debian base made by debootstrap (cached), then the Containerfile's
# `prebuilt` stage around a peakhour binary built here.
#
#   scripts/build-image.sh [BINARY]    # default: target/release/peakhour
#
# The image is tagged localhost/peakhour:VERSION (the crate's version); the
# tag is printed last. Needs root, podman, runc and debootstrap
# (scripts/setup.sh installs them).
#
# Podman runs containers here only with runc and fixed resource limits (the
# sandbox cannot raise them, and crun refuses the hybrid cgroup layout):
# a private containers.conf says so, through CONTAINERS_CONF, leaving /etc
# alone. Environment:
#   PEAKHOUR_IMAGE_CACHE  where the debootstrap base is kept (/var/cache/peakhour)
#   PEAKHOUR_IMAGE_TAG    the tag (default localhost/peakhour:VERSION)
set -euo pipefail
cd "$(dirname "$0")/.."

binary=${1:-target/release/peakhour}
cache=${PEAKHOUR_IMAGE_CACHE:-/var/cache/peakhour}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
tag=${PEAKHOUR_IMAGE_TAG:-localhost/peakhour:$version}
# The base's recipe; a new one gets a new name, so a cached old one is not used.
base_recipe=bookworm-minbase-ca
base_tag=localhost/peakhour-base:$base_recipe

say() { printf '==> %s\n' "$*" >&2; }

[ -x "$binary" ] || { echo "error: no peakhour binary at $binary (cargo build --release -p peakhour)" >&2; exit 2; }
for tool in podman debootstrap; do
  command -v "$tool" >/dev/null || { echo "error: $tool is missing (scripts/setup.sh installs it)" >&2; exit 2; }
done

mkdir -p "$cache"
chmod 0755 "$cache"
conf="$cache/containers.conf"
if [ ! -f "$conf" ]; then
  cat > "$conf" <<'CONF'
[engine]
runtime = "runc"
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
CONF
fi
export CONTAINERS_CONF="$conf"

# The base: Debian 12 minbase from the archive apt already uses, made once.
if ! podman image exists "$base_tag"; then
  rootfs="$cache/$base_recipe-rootfs"
  if [ ! -f "$rootfs/.complete" ]; then
    mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
    mirror=${mirror:-http://deb.debian.org/debian}
    say "debootstrap --variant=minbase bookworm from $mirror (about 30 s)"
    rm -rf "$rootfs"
    # ca-certificates: peakhour verifies servers' TLS with the system's roots.
    debootstrap --variant=minbase --include=ca-certificates bookworm "$rootfs" "$mirror" >&2
    # What a container never reads: docs, man pages, locales, apt's caches.
    rm -rf "$rootfs"/usr/share/{doc,man,info,locale}/* "$rootfs"/var/cache/apt/* \
      "$rootfs"/var/lib/apt/lists/*
    touch "$rootfs/.complete"
  fi
  say "importing the base as $base_tag"
  tar -C "$rootfs" --exclude=./.complete -c . | podman import - "$base_tag" >&2
fi

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp Containerfile "$context/Containerfile"
cp "$binary" "$context/peakhour"
say "building $tag from $binary"
old=$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || echo none)
podman build --quiet --target prebuilt --build-arg "BASE=$base_tag" \
  -t "$tag" -f "$context/Containerfile" "$context" >&2
# The image the tag named before is left nameless: remove it, so that
# repeated builds (every test run makes one) do not fill the disk.
new=$(podman image inspect --format '{{.Id}}' "$tag")
if [ "$old" != none ] && [ "$old" != "$new" ]; then
  podman rmi "$old" >/dev/null 2>&1 || say "the previous image $old is still in use; not removed"
fi
echo "$tag"
