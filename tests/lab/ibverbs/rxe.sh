# The ibverbs part's guest jobs share this: what they wait for of this
# guest's rxe0.  For a job to source: . /lab/ibverbs/rxe.sh

# wait_gid IPV4: until rxe0's GID table holds it (the kernel adds it from
# the address, asynchronously), at most 5 s.
wait_gid() {
    hex=$(printf '%s' "$1" | awk -F. '{printf "%02x%02x:%02x%02x", $1, $2, $3, $4}')
    i=0
    until grep -qs "ffff:$hex\$" /sys/class/infiniband/rxe0/ports/1/gids/*; do
        [ $i -ge 50 ] && return 1
        sleep 0.1; i=$((i + 1))
    done
}
