#!/usr/bin/env bash
# Fetch QEMU 10.0.x from Debian's source package (trixie) and unpack it with
# dpkg-source, so Debian's patches are applied, into subprojects/qemu.
# Idempotent: does nothing when the pinned version is already unpacked.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/config.sh"

dest=$top/subprojects/qemu
if [ -f "$dest/.virtio-rdma-source" ] && [ "$(cat "$dest/.virtio-rdma-source")" = "$QEMU_DEB_VERSION" ]; then
    exit 0
fi

dl=$top/subprojects/download
mkdir -p "$dl"
cd "$dl"
if ! ls qemu_*.dsc >/dev/null 2>&1; then
    echo "fetch-qemu: apt-get source qemu=$QEMU_DEB_VERSION (download only)"
    # _apt cannot write to root-owned work trees; that warning is harmless.
    if ! timeout 900 apt-get source --download-only "qemu=$QEMU_DEB_VERSION" >download.log 2>&1; then
        cat download.log >&2
        echo "fetch-qemu: could not download QEMU $QEMU_DEB_VERSION source from the trixie" \
             "deb-src suite (see scripts/apt-sources.sh)" >&2
        exit 1
    fi
fi
dsc=$(ls qemu_*.dsc | head -n 1)
rm -rf "$dest.tmp"
echo "fetch-qemu: dpkg-source -x $dsc"
dpkg-source --no-check -x "$dsc" "$dest.tmp" >unpack.log 2>&1 || { cat unpack.log >&2; exit 1; }
rm -rf "$dest"
mv "$dest.tmp" "$dest"
echo "$QEMU_DEB_VERSION" > "$dest/.virtio-rdma-source"
