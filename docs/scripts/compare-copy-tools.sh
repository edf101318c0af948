#!/bin/bash
# Compare hare with scp, rsync over ssh, qcp and lftp on the same emulated path: one
# namespace-mode emulator (hare-lab emulate) for the whole run, kernel TCP CUBIC in both
# namespaces, a private sshd on the receiver (10.77.0.2) that every tool but lftp logs in to
# with generated keys, and per tool and data set --runs timed copies from the sender
# namespace, each verified. Tools: hare, hare-cN (hare-send -C N), scp, rsync, qcp, and lftpN
# (lftp over SFTP with N connections: `pget -n N` for the file, `mirror --parallel=N` for the
# tree; lftp splits only downloads, so it runs in the receiver namespace and pulls from a
# second sshd on the sender, 10.77.0.1: the data still crosses the path's forward direction).
# Output: a markdown table on stdout and in OUT/table.md, raw per-run lines in OUT/runs.tsv.
# See docs/TRANSFER.md, "Measuring against scp, rsync and qcp".
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: compare-copy-tools.sh [--rate 100m] [--rtt 80ms] [--loss P] [--queue BYTES] [--seed N]
         [--file-mb 500] [--small-files 2000] [--small-kb 4] [--runs 3]
         [--tools hare,hare-c4,scp,rsync,qcp,lftp8] [--out DIR] [--data DIR] [--bin-dir DIR] [--qcp PATH]
         [--instance NAME] [--timeout 900]
Root only (network namespaces, TUN devices, sshd). Sizes: --file-mb in MiB, --small-kb in KiB.
--rate takes k/m/g (SI bit/s), --rtt takes us/ms/s; --loss is a Bernoulli probability on the
data direction; --queue is the drop-tail limit in bytes per direction (default one BDP).
--bin-dir holds release hare-lab, hare-send and hare-recv (default: target/release of the
repository, or $CARGO_TARGET_DIR/release). --data keeps the test data (default OUT/data) and
reuses it when its sizes match.
EOF
}

die() { echo "compare-copy-tools: $*" >&2; exit 1; }

# ---- options -------------------------------------------------------------------------------
command_line="$0 $*"
rate=100m rtt=80ms loss="" queue="" seed=1 file_mb=500 small_files=2000 small_kb=4 runs=3
tools=hare,scp,rsync,qcp out="" data="" bin_dir="" qcp_bin="" instance=cmp copy_timeout=900
while [[ $# -gt 0 ]]; do
  case $1 in
    --rate|--rtt|--loss|--queue|--seed|--file-mb|--small-files|--small-kb|--runs|--tools|\
    --out|--data|--bin-dir|--qcp|--instance|--timeout)
      [[ $# -ge 2 ]] || { usage >&2; die "$1 needs a value"; }
      v=$2
      case $1 in
        --rate) rate=$v ;; --rtt) rtt=$v ;; --loss) loss=$v ;; --queue) queue=$v ;;
        --seed) seed=$v ;; --file-mb) file_mb=$v ;; --small-files) small_files=$v ;;
        --small-kb) small_kb=$v ;; --runs) runs=$v ;; --tools) tools=$v ;; --out) out=$v ;;
        --data) data=$v ;; --bin-dir) bin_dir=$v ;; --qcp) qcp_bin=$v ;;
        --instance) instance=$v ;; --timeout) copy_timeout=$v ;;
      esac
      shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done

[[ $(id -u) -eq 0 ]] || die "must run as root (network namespaces, TUN devices and sshd need it)"
[[ -n $out ]] || { usage >&2; die "--out DIR is required"; }
for n in file_mb small_files small_kb runs seed copy_timeout; do
  [[ ${!n} =~ ^[0-9]+$ ]] || die "--${n//_/-} ${!n}: expected a whole number"
done
[[ $runs -ge 1 ]] || die "--runs $runs: at least 1"
[[ $instance =~ ^[a-z0-9]{1,16}$ ]] || die "--instance $instance: 1 to 16 characters of a-z 0-9"
[[ -z $loss || $loss =~ ^(0(\.[0-9]+)?|1(\.0*)?|\.[0-9]+|[0-9.]+e-[0-9]+)$ ]] \
  || die "--loss $loss: expected a probability in [0, 1]"
[[ -z $queue || $queue =~ ^[0-9]+$ ]] || die "--queue $queue: expected a number of bytes"

# Rate in bit/s (SI suffixes, as hare-link reads them) and RTT in ns.
[[ $rate =~ ^([0-9]+(\.[0-9]+)?)([kKmMgG]?)$ ]] || die "--rate $rate: expected e.g. 100m or 1g"
rate_bps=$(awk -v n="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3],,}" \
  'BEGIN { m = (u == "k") ? 1e3 : (u == "m") ? 1e6 : (u == "g") ? 1e9 : 1; printf "%d", n * m }')
[[ $rtt =~ ^([0-9]+(\.[0-9]+)?)(us|ms|s)$ ]] || die "--rtt $rtt: expected e.g. 80ms"
rtt_ns=$(awk -v n="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3]}" \
  'BEGIN { m = (u == "us") ? 1e3 : (u == "ms") ? 1e6 : 1e9; printf "%d", n * m }')
[[ $rate_bps -gt 0 && $rtt_ns -gt 0 ]] || die "--rate and --rtt must be above 0"
bdp=$(awk -v r="$rate_bps" -v t="$rtt_ns" 'BEGIN { b = int(r * t / 8e9); print (b < 1) ? 1 : b }')
queue=${queue:-$bdp}

IFS=, read -r -a tool_list <<<"$tools"
for t in "${tool_list[@]}"; do
  case $t in
    hare|scp|rsync|qcp) ;;
    hare-c[0-9]*|lftp[0-9]*) [[ ${t##*[a-z-]} =~ ^[1-9][0-9]*$ ]] || die "--tools: $t: expected a count" ;;
    *) die "--tools: unknown tool $t (hare, hare-cN, scp, rsync, qcp, lftpN)" ;;
  esac
done
has_tool() { [[ ,$tools, == *,$1,* ]]; }
has_lftp() { [[ ,$tools, == *,lftp[0-9]* ]]; }
if has_lftp; then command -v lftp >/dev/null || die "lftp missing: apt-get install -y lftp"; fi

repo=$(cd "$(dirname "$0")/../.." && pwd)
bin_dir=${bin_dir:-${CARGO_TARGET_DIR:-$repo/target}/release}
lab=$bin_dir/hare-lab
for b in hare-lab hare-send hare-recv; do
  [[ -x $bin_dir/$b ]] || die "$bin_dir/$b missing: cargo build --release -p hare-lab \
-p hare-send -p hare-recv (or --bin-dir DIR)"
done
bin_dir=$(cd "$bin_dir" && pwd)
if has_tool qcp; then
  qcp_bin=${qcp_bin:-$(command -v qcp || true)}
  [[ -n $qcp_bin && -x $qcp_bin ]] || die "qcp not on PATH: install it or give --qcp PATH"
  qcp_bin=$(cd "$(dirname "$qcp_bin")" && pwd)/$(basename "$qcp_bin")
fi
has_tool rsync && { command -v rsync >/dev/null || die "rsync missing: apt-get install -y rsync"; }
for b in ssh scp ssh-keygen /usr/sbin/sshd timeout; do
  command -v "$b" >/dev/null || die "$b missing: apt-get install -y openssh-server openssh-client"
done
if command -v b3sum >/dev/null; then hash_cmd=b3sum hash_name=BLAKE3
else hash_cmd=sha256sum hash_name=SHA-256; fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
data=${data:-$out/data}
mkdir -p "$data"
data=$(cd "$data" && pwd)
work=$out/work
rm -rf "$work"
mkdir -p "$work"

# ---- teardown ------------------------------------------------------------------------------
emu_pid="" sshd_pid="" verdict=""
src_sshd_pid=""
stop_all() {
  if [[ -n $src_sshd_pid ]]; then
    kill "$src_sshd_pid" 2>/dev/null || true
    wait "$src_sshd_pid" 2>/dev/null || true
    src_sshd_pid=""
  fi
  if [[ -n $sshd_pid ]]; then
    kill "$sshd_pid" 2>/dev/null || true
    wait "$sshd_pid" 2>/dev/null || true
    sshd_pid=""
  fi
  if [[ -n $emu_pid ]]; then
    # The emulator restores and tears down on SIGTERM (background jobs of a script ignore
    # SIGINT); bounded wait, then SIGKILL (the next start removes what that leaves).
    kill -TERM "$emu_pid" 2>/dev/null || true
    for _ in $(seq 150); do kill -0 "$emu_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$emu_pid" 2>/dev/null || true
    wait "$emu_pid" 2>/dev/null || true
    emu_pid=""
    verdict=$(grep -m1 '^emulator (' "$out/emulator.out" 2>/dev/null || true)
  fi
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the path and the emulator -------------------------------------------------------------
fwd_ns=$(( rtt_ns - rtt_ns / 2 )) rev_ns=$(( rtt_ns / 2 ))
{
  echo "# Written by compare-copy-tools.sh: $rate, RTT $rtt, drop-tail $queue bytes per direction."
  echo "[forward]"
  echo "rate = $rate_bps"
  echo "delay = \"${fwd_ns}ns\""
  echo "queue_bytes = $queue"
  echo "seed = $seed"
  if [[ -n $loss ]]; then
    echo "[[forward.loss]]"
    echo "model = \"bernoulli\""
    echo "p = $loss"
  fi
  echo "[reverse]"
  echo "rate = $rate_bps"
  echo "delay = \"${rev_ns}ns\""
  echo "queue_bytes = $queue"
  echo "seed = $(( seed + 1 ))"
} >"$out/path.toml"

"$lab" emulate --mode namespace --instance "$instance" --path "$out/path.toml" \
  --report "$out/emulator.json" >"$out/emulator.out" 2>"$out/emulator.err" &
emu_pid=$!
in_ns() { local side=$1; shift; "$lab" exec "$side" --instance "$instance" -- "$@"; }
for i in $(seq 300); do
  kill -0 "$emu_pid" 2>/dev/null || { cat "$out/emulator.err" >&2; die "the emulator exited"; }
  if [[ -e /run/netns/hare-$instance-snd && -e /run/netns/hare-$instance-rcv ]] &&
     in_ns receiver true 2>/dev/null; then
    break
  fi
  [[ $i -lt 300 ]] || die "the namespaces did not appear within 30 s (see $out/emulator.err)"
  sleep 0.1
done

# Kernel TCP CUBIC in both namespaces (a new namespace copies the host's default, BBR here).
cc=""
for side in sender receiver; do
  allowed=$(in_ns "$side" cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)
  # Written only when cubic is missing (here the kernel refuses even an unchanged list from
  # inside a namespace with EINVAL).
  if [[ " $allowed " != *" cubic "* ]]; then
    in_ns "$side" sysctl -q -w "net.ipv4.tcp_allowed_congestion_control=$allowed cubic"
  fi
  in_ns "$side" sysctl -q -w net.ipv4.tcp_congestion_control=cubic
  got=$(in_ns "$side" cat /proc/sys/net/ipv4/tcp_congestion_control)
  [[ $got == cubic ]] || die "$side namespace: tcp_congestion_control is $got, not cubic"
  cc="$cc $side $got,"
done
cc=${cc%,}

# ---- sshd on the receiver, and the client configuration that reaches it as testhost ------
ssh_dir=$work/ssh
mkdir -p "$ssh_dir"
for k in host_key user_key; do ssh-keygen -q -t ed25519 -N "" -f "$ssh_dir/$k"; done
cp "$ssh_dir/user_key.pub" "$ssh_dir/authorized_keys"
user=$(id -un)
{
  echo "ListenAddress 10.77.0.2"
  echo "Port 22"
  echo "HostKey $ssh_dir/host_key"
  echo "AuthorizedKeysFile $ssh_dir/authorized_keys"
  echo "PasswordAuthentication no"
  echo "KbdInteractiveAuthentication no"
  echo "UsePAM no"
  echo "StrictModes no"
  echo "PermitRootLogin prohibit-password"
  echo "PidFile $ssh_dir/sshd.pid"
  # OpenSSH 9's scp speaks SFTP.
  echo "Subsystem sftp /usr/lib/openssh/sftp-server"
} >"$ssh_dir/sshd_config"
ssh_cfg=$ssh_dir/ssh_config
# One ssh client entry: host name $1 at address $2, with the generated user key.
host_block() {
  echo "Host $1"
  echo "  HostName $2"
  echo "  Port 22"
  echo "  User $user"
  echo "  IdentityFile $ssh_dir/user_key"
  echo "  IdentitiesOnly yes"
  echo "  StrictHostKeyChecking no"
  echo "  UserKnownHostsFile /dev/null"
  echo "  LogLevel ERROR"
  echo "  BatchMode yes"
}
# testhost: the receiver; srchost: the sender's side, where lftp pulls from (see the header).
{ host_block testhost 10.77.0.2; host_block srchost 10.77.0.1; } >"$ssh_cfg"
mkdir -p /run/sshd  # sshd's privilege separation directory (Debian makes it at boot)
# Started directly (not through the in_ns function, whose subshell would be $!) so that
# $! is sshd itself once hare-lab has exec'd it.
"$lab" exec receiver --instance "$instance" -- /usr/sbin/sshd -D -e -f "$ssh_dir/sshd_config" \
  >"$out/sshd.log" 2>&1 &
sshd_pid=$!
# Wait for an ssh login: sshd pid $1 (log $2), from namespace side $3 to host $4 ($5).
wait_login() {
  for i in $(seq 100); do
    kill -0 "$1" 2>/dev/null || { cat "$2" >&2; die "the sshd on $5 exited"; }
    in_ns "$3" ssh -F "$ssh_cfg" "$4" true 2>/dev/null && return 0
    [[ $i -lt 100 ]] || die "no ssh login to $5 within 20 s (see $2)"
    sleep 0.2
  done
}
wait_login "$sshd_pid" "$out/sshd.log" sender testhost 10.77.0.2

if has_lftp; then
  sed -e 's/^ListenAddress .*/ListenAddress 10.77.0.1/' -e "s#^PidFile .*#PidFile $ssh_dir/sshd-src.pid#" \
    "$ssh_dir/sshd_config" >"$ssh_dir/sshd_src_config"
  "$lab" exec sender --instance "$instance" -- /usr/sbin/sshd -D -e -f "$ssh_dir/sshd_src_config" \
    >"$out/sshd-src.log" 2>&1 &
  src_sshd_pid=$!
  wait_login "$src_sshd_pid" "$out/sshd-src.log" receiver srchost 10.77.0.1
fi

# qcp is told the path it crosses, as its documentation asks (bandwidth in bytes/s, RTT in ms).
# --remote-qcp-binary: the remote runs this qcp with --server (no qcp on its PATH needed).
# --ssh-config lets qcp resolve testhost's HostName itself; -S -F -S CFG hands the file to ssh.
qcp_args=(-q --ssh-config "$ssh_cfg" -S -F -S "$ssh_cfg" --remote-qcp-binary "$qcp_bin" --rx "$(( rate_bps / 8 ))" \
  --tx "$(( rate_bps / 8 ))" --rtt "$(( (rtt_ns + 500000) / 1000000 ))")

# ---- test data (made once, reused while its sizes match) ----------------------------------
stamp="file_mb=$file_mb small_files=$small_files small_kb=$small_kb hash=$hash_name"
if [[ $(cat "$data/stamp" 2>/dev/null) != "$stamp" ]]; then
  echo "making test data in $data ..." >&2
  rm -rf "$data/big.bin" "$data/tree" "$data/stamp" "$data/big.hash"
  head -c $(( file_mb * 1048576 )) /dev/urandom >"$data/big.bin"
  for (( i = 0; i < small_files; i++ )); do
    d=$data/tree/d$(( i / 100 ))
    (( i % 100 )) || mkdir -p "$d"
    head -c $(( small_kb * 1024 )) /dev/urandom >"$d/f$i.bin"
  done
  $hash_cmd "$data/big.bin" | cut -d' ' -f1 >"$data/big.hash"
  echo "$stamp" >"$data/stamp"
fi
big_size=$(stat -c %s "$data/big.bin")
big_hash=$(cat "$data/big.hash")
tree_count=$(find "$data/tree" -type f | wc -l)
tree_bytes=$(find "$data/tree" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')

# ---- the copies ----------------------------------------------------------------------------
dst=$work/dst
rsh="ssh -F $ssh_cfg"
# Checks the copy: size and hash of the big file, count and bytes of the tree.
verify() {
  local set=$1
  if [[ $set == file ]]; then
    [[ -f $dst/big.bin && $(stat -c %s "$dst/big.bin") == "$big_size" ]] || return 1
    [[ $($hash_cmd "$dst/big.bin" | cut -d' ' -f1) == "$big_hash" ]] || return 1
  else
    [[ -d $dst/tree ]] || return 1
    [[ $(find "$dst/tree" -type f | wc -l) == "$tree_count" ]] || return 1
    [[ $(find "$dst/tree" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }') \
       == "$tree_bytes" ]] || return 1
  fi
}

: >"$out/copies.log"
printf 'tool\tdata\trun\tseconds\tstatus\texit\tstarted_utc\tsync_after_s\n' >"$work/runs.partial"
for run in $(seq "$runs"); do
  for tool in "${tool_list[@]}"; do
    for set in file tree; do
      rm -rf "$dst"; mkdir -p "$dst"; sync
      side=sender
      case $tool in
        hare) argv=(env "HARE_SEND_IDENTITY=$work/hare-id" "$bin_dir/hare-send" -q -e "$rsh"
                    --remote-bin "$bin_dir") ;;
        hare-c*) argv=(env "HARE_SEND_IDENTITY=$work/hare-id" "$bin_dir/hare-send" -q -e "$rsh"
                    --remote-bin "$bin_dir" -C "${tool#hare-c}") ;;
        lftp*) n=${tool#lftp} side=receiver
               if [[ $set == file ]]; then get="pget -n $n $data/big.bin -o $dst/big.bin"
               else get="mirror --parallel=$n $data/tree $dst/tree"; fi
               argv=(lftp -c "set sftp:connect-program 'ssh -a -x -F $ssh_cfg'; \
set net:max-retries 1; set cmd:fail-exit yes; open sftp://srchost; $get") ;;
        scp) argv=(scp -q -F "$ssh_cfg")
             if [[ $set == tree ]]; then argv+=(-r); fi ;;
        rsync) argv=(rsync -a -e "$rsh") ;;
        qcp) argv=("$qcp_bin" "${qcp_args[@]}")
             if [[ $set == tree ]]; then argv+=(-r); fi ;;
      esac
      if [[ $tool != lftp* ]]; then
        if [[ $set == file ]]; then argv+=("$data/big.bin"); else argv+=("$data/tree"); fi
        if [[ $tool == hare* ]]; then argv+=("testhost:$dst"); else argv+=("testhost:$dst/"); fi
      fi
      started=$(date -u +%FT%TZ)
      echo "== run $run $tool $set $started: ${argv[*]}" >>"$out/copies.log"
      t0=$(date +%s.%N)
      rc=0
      in_ns "$side" timeout -k 10 "$copy_timeout" "${argv[@]}" </dev/null \
        >>"$out/copies.log" 2>&1 || rc=$?
      t1=$(date +%s.%N)
      # hare's receiver makes the data durable before it answers; scp, rsync and qcp leave it
      # in the page cache. The flush that follows is timed apart (runs.tsv, sync_after_s).
      sync
      t2=$(date +%s.%N)
      secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
      sync_secs=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.2f", b - a }')
      if [[ $rc -eq 124 ]]; then status=timeout
      elif [[ $rc -ne 0 ]]; then status=failed
      elif verify "$set"; then status=ok
      else status=mismatch; fi
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$set" "$run" "$secs" "$status" "$rc" \
        "$started" "$sync_secs" >>"$work/runs.partial"
      echo "run $run $tool $set: $secs s $status" >&2
    done
  done
done

# ---- versions, the emulator's verdict, the table -------------------------------------------
# awk, not head: a writer cut off by head's early exit fails under pipefail.
first_line() { "$@" 2>&1 | awk 'NR == 1' || true; }
versions="$(first_line ssh -V); $(first_line rsync --version)"
if has_lftp; then versions="$versions; $(first_line lftp --version)"; fi
if has_tool qcp; then versions="$versions; $(first_line "$qcp_bin" --version)"; fi
versions="$versions; $(first_line "$bin_dir/hare-send" --version)"
stop_all  # the emulator's self-check is printed when it stops
[[ -n $verdict ]] || verdict="no verdict: the emulator printed no self-check (see $out/emulator.err)"
word=$(grep -o 'INVALID\|VALID' <<<"$verdict" | head -1 || true)
awk -F'\t' -v OFS='\t' -v w="${word:-unknown}" \
  'NR == 1 { print $0, "emulator_whole_run"; next } { print $0, w }' \
  "$work/runs.partial" >"$out/runs.tsv"
path_line="$rate ($rate_bps bit/s) each way, RTT $rtt (one-way $(( fwd_ns ))/$(( rev_ns )) ns), \
drop-tail $queue bytes per direction, $( [[ -n $loss ]] && echo "Bernoulli loss p=$loss on the \
data direction (seed $seed)" || echo "no random loss"); MTU 1500; path file $out/path.toml"
{
  echo "Command: \`$command_line\`"
  echo
  echo "Path: $path_line"
  echo
  echo "Kernel TCP congestion control in the namespaces:$cc (scp and rsync run over it)"
  echo
  echo "Versions: $versions"
  echo
  echo "Emulator (one emulator for the whole run, so this verdict covers all copies together,"
  echo "not each copy): $verdict"
  echo
  echo "Data: 1 file of $file_mb MiB (checked by size and $hash_name); $small_files files of"
  echo "$small_kb KiB in $(( (small_files + 99) / 100 )) directories (checked by count and bytes)."
  echo "Seconds are wall time of one copy started in the sender namespace, ssh login included;"
  echo "each copy is limited to $copy_timeout s."
  echo
  echo "| tool | data | median s | runs (s) |"
  echo "|---|---|---|---|"
  for tool in "${tool_list[@]}"; do
    for set in file tree; do
      if [[ $set == file ]]; then label="1 file, $file_mb MiB"
      else label="$small_files files x $small_kb KiB"; fi
      awk -F'\t' -v tool="$tool" -v set="$set" -v label="$label" -v lim="$copy_timeout" '
        function shown(i) {
          if (st[i] == "ok") return s[i]
          if (st[i] == "timeout") return ">" lim " s"
          return st[i]
        }
        NR > 1 && $1 == tool && $2 == set {
          n++; s[n] = $4; st[n] = $5
          # Failed, mismatched and timed-out copies sort after every completed one.
          key[n] = ($5 == "ok") ? $4 + 0 : 1e12 + n
        }
        END {
          if (n == 0) exit
          for (i = 1; i <= n; i++) { ord[i] = i }
          for (i = 2; i <= n; i++)
            for (j = i; j > 1 && key[ord[j - 1]] > key[ord[j]]; j--) {
              t = ord[j]; ord[j] = ord[j - 1]; ord[j - 1] = t
            }
          if (n % 2) med = shown(ord[(n + 1) / 2])
          else {
            a = ord[n / 2]; b = ord[n / 2 + 1]
            if (st[a] == "ok" && st[b] == "ok") med = sprintf("%.2f", (s[a] + s[b]) / 2)
            else med = shown(st[a] == "ok" ? b : a)
          }
          line = ""
          for (i = 1; i <= n; i++) line = line (i > 1 ? ", " : "") shown(i)
          printf "| %s | %s | %s | %s |\n", tool, label, med, line
        }' "$out/runs.tsv"
    done
  done
} >"$out/table.md"
cat "$out/table.md"
