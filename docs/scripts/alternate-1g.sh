#!/bin/bash
# Alternate two builds of hare-send/hare-recv on one 1 GiB file over loopback and print the
# seconds of each transfer (hare-send's start to its exit, every byte verified and durable).
# Usage: alternate-1g.sh OLD_BIN_DIR NEW_BIN_DIR [ROUNDS] [WORK_DIR]
# Each BIN_DIR holds a release hare-send and hare-recv; WORK_DIR (default /tmp/hare-alt)
# should be on the disk to measure (not tmpfs).
set -euo pipefail
old=$1 new=$2 rounds=${3:-5} w=${4:-/tmp/hare-alt}
rm -rf "$w"; mkdir -p "$w/src" "$w/dst"
head -c 1073741824 /dev/urandom > "$w/src/big.bin"
declare -A addr fp pid
for v in old new; do
  bin=${!v}
  "$bin/hare-recv" --listen 127.0.0.1:0 --identity "$w/id-$v" --dir "$w/dst" --open -q \
    > "$w/recv-$v.out" 2>&1 &
  pid[$v]=$!
done
trap 'kill ${pid[old]} ${pid[new]} 2>/dev/null' EXIT
sleep 2
for v in old new; do
  addr[$v]=$(grep -o 'listening on [^ ]*' "$w/recv-$v.out" | cut -d' ' -f3)
  fp[$v]=$(grep -o 'sha256 [0-9a-f]*' "$w/recv-$v.out" | cut -d' ' -f2)
done
for round in $(seq "$rounds"); do
  for v in old new; do
    bin=${!v}
    rm -f "$w/dst/big.bin"; sync
    t0=$(date +%s.%N)
    "$bin/hare-send" -q --identity "$w/sid" --pin "${fp[$v]}" "$w/src/big.bin" "${addr[$v]}"
    t1=$(date +%s.%N)
    cmp -s "$w/src/big.bin" "$w/dst/big.bin" || { echo "round $round $v: file differs" >&2; exit 1; }
    echo "$round $v $(echo "$t1 - $t0" | bc)"
  done
done
