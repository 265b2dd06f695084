#!/usr/bin/env bash
# Fetch Debian's rdma-core source package of exactly the installed
# libibverbs1 version and unpack it (Debian's patches applied) into
# subprojects/rdma-core.  The guest provider builds against its private
# headers (driver.h, kern-abi.h, ...), which no binary package ships, and
# runs against the installed libibverbs.so.1: the two should be one release.
#
# Fallback, with a warning: when the archive cannot serve that exact source
# (some mirrors lack an orig tarball), take another rdma-core source the
# deb-src index lists whose private ABI (IBVERBS_PRIVATE_<PABI>) is the
# installed library's, checked against the index's SHA-256.
# scripts/build-guest.sh then checks that the provider imports only symbols
# the installed library exports.  For bookworm's 44.0-2 that is trixie's
# 56.1: both export the same public symbols, and the installed library's
# verbs_set_ops() reads 76 op slots, as 56.1's verbs_context_ops has, at the
# offsets 56.1 gives poll_cq, post_send, post_recv, req_notify_cq,
# query_device_ex, create_qp_ex and alloc_td (checked 2026-11-24 by
# disassembly).
# Idempotent: does nothing when a source for this libibverbs1 is unpacked.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

want=$(dpkg-query -W -f='${Version}' libibverbs1 2>/dev/null || true)
if [ -z "$want" ]; then
    echo "fetch-rdma-core: libibverbs1 is not installed (scripts/deps.sh installs it)" >&2
    exit 1
fi
dest=$top/subprojects/rdma-core
if [ -f "$dest/.virtio-rdma-for" ] && [ "$(cat "$dest/.virtio-rdma-for")" = "$want" ]; then
    exit 0
fi

dl=$top/subprojects/download
mkdir -p "$dl"
cd "$dl"
rm -rf "$dest.tmp"

# Exact version: the .dsc, the orig tarball and Debian's patches.
exact() {
    local dsc=rdma-core_${want#*:}.dsc
    echo "fetch-rdma-core: apt-get source rdma-core=$want (download only)"
    # _apt cannot write to root-owned work trees; that warning is harmless.
    timeout 600 apt-get source --download-only "rdma-core=$want" >rdma-core-download.log 2>&1 ||
        return 1
    echo "fetch-rdma-core: dpkg-source -x $dsc"
    dpkg-source --no-check -x "$dsc" "$dest.tmp" >rdma-core-unpack.log 2>&1 ||
        { cat rdma-core-unpack.log >&2; return 1; }
    echo "$want" > "$dest.tmp/.virtio-rdma-source"
}

# "<sha256> <file>" of every orig tarball in the deb-src index, per version.
origs() {
    apt-cache showsrc rdma-core | awk '
        /^Version:/ { ver = $2 }
        /^Checksums-Sha256:/ { sums = 1; next }
        /^[^ ]/ { sums = 0 }
        sums && $3 ~ /\.orig\.tar\./ { print ver, $1, $3 }'
}

fallback() {
    local pabi ver sum file top_dir
    pabi=$(objdump -T "$(ldconfig -p | awk '/libibverbs\.so\.1 .*x86-64/ && !f { print $NF; f = 1 }')" |
           grep -o 'IBVERBS_PRIVATE_[0-9]*' | head -n 1)
    pabi=${pabi#IBVERBS_PRIVATE_}
    [ -n "$pabi" ] || { echo "fetch-rdma-core: no IBVERBS_PRIVATE_ version in libibverbs.so.1" >&2; return 1; }
    while read -r ver sum file; do
        [ "$ver" = "$want" ] && continue
        timeout 600 apt-get source --download-only "rdma-core=$ver" >>rdma-core-download.log 2>&1 || true
        [ -f "$file" ] && echo "$sum  $file" | sha256sum --quiet -c - 2>/dev/null || continue
        rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
        tar -xf "$file" -C "$dest.tmp" --strip-components=1
        if ! grep -q "set(IBVERBS_PABI_VERSION \"$pabi\")" "$dest.tmp/CMakeLists.txt"; then
            rm -rf "$dest.tmp"
            continue
        fi
        echo "fetch-rdma-core: WARNING: rdma-core $want's source is not available from the" \
             "archive; using upstream $file of rdma-core $ver (same private ABI, PABI $pabi)" >&2
        echo "$ver" > "$dest.tmp/.virtio-rdma-source"
        return 0
    done < <(origs | sort -k1,1 -V -r)
    return 1
}

if ! exact; then
    grep -E '^(E|Err):' rdma-core-download.log >&2 || true
    if ! fallback; then
        echo "fetch-rdma-core: could not get rdma-core $want's source (nor another with the" \
             "same private ABI): it needs a deb-src line for the suite libibverbs1 came from" \
             "(scripts/apt-sources.sh adds bookworm's; then apt-get update)" >&2
        exit 1
    fi
fi
echo "$want" > "$dest.tmp/.virtio-rdma-for"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
