#!/usr/bin/env bash
# Add the extra apt suites the build needs -- bookworm-backports (meson
# >= 1.5, the 6.12 guest kernel's headers), trixie deb-src (QEMU 10.0.x
# source) and bookworm deb-src (rdma-core of the installed libibverbs1, whose
# private headers the guest provider builds against) -- pointing at whatever
# Debian archive this machine is already configured for.  No mirror host is
# written in the repo: the URI is read from the machine's own apt sources.
set -euo pipefail

out=/etc/apt/sources.list.d/virtio-rdma-extra.sources

# The first URI serving the stable suite (not -security / -updates).
find_uri() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk '
            /^[[:space:]]*$/ { if (uri != "" && main) { print uri; exit } uri = ""; main = 0; next }
            /^URIs:/   { uri = $2 }
            /^Suites:/ { for (i = 2; i <= NF; i++) if ($i ~ /^(bookworm|stable)$/) main = 1 }
            END { if (uri != "" && main) print uri }
        ' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk '$1 == "deb" && $3 ~ /^(bookworm|stable)$/ {
                 for (i = 2; i <= NF; i++) if ($i ~ /^[a-z+]+:\/\//) { print $i; exit } }' "$f"
    done
}

uri=$(find_uri | head -n 1)
if [ -z "$uri" ]; then
    echo "apt-sources.sh: no Debian bookworm entry found in /etc/apt/sources.list*;" \
         "cannot derive the archive for bookworm-backports / trixie and bookworm deb-src" >&2
    exit 1
fi
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

want=$(cat <<EOT
Types: deb
URIs: $uri
Suites: bookworm-backports
Components: main
Signed-By: $keyring

Types: deb-src
URIs: $uri
Suites: trixie bookworm
Components: main
Signed-By: $keyring
EOT
)
if [ ! -f "$out" ] || [ "$(cat "$out")" != "$want" ]; then
    printf '%s\n' "$want" > "$out"
    echo "apt-sources.sh: wrote $out"
fi
