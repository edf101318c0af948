#!/bin/bash
# One table from several compare-copy-tools.sh runs: for each path (LABEL=OUTDIR, in the
# order given), data set and tool, the median of its copies' wall seconds, and the median of
# those seconds plus the `sync` timed after each copy (hare's receiver makes the data durable
# before it answers; scp, rsync and qcp leave it in the page cache for the flush to write).
# A copy that did not complete counts as the slowest; the median is then shown as `>T s`
# (the run's --timeout, read from its table.md) or as the copy's status. LABEL=DIR1,DIR2 takes
# each tool's copies from the last of the runs that has them (a tool run again later, alone,
# on the same path).
# Usage: copy-table.sh [--tools hare,hare-c8,scp,rsync,qcp] LABEL=OUTDIR[,OUTDIR...]...
set -euo pipefail
tools=hare,hare-c8,scp,rsync,qcp
if [[ ${1:-} == --tools ]]; then tools=$2; shift 2; fi
[[ $# -ge 1 ]] || { echo "usage: copy-table.sh [--tools LIST] LABEL=OUTDIR..." >&2; exit 1; }
IFS=, read -r -a tool_list <<<"$tools"
header="| path | data |" rule="|---|---|"
for t in "${tool_list[@]}"; do header="$header $t |"; rule="$rule---|"; done
for which in plain synced; do
  case $which in
    plain) echo "Wall seconds, median of the runs (as each tool reports done):" ;;
    synced) echo; echo "The same with the \`sync\` after each copy added (like for like with hare):" ;;
  esac
  echo; echo "$header"; echo "$rule"
  for arg in "$@"; do
    label=${arg%%=*}
    IFS=, read -r -a dirs <<<"${arg#*=}"
    for d in "${dirs[@]}"; do
      [[ -f $d/runs.tsv ]] || { echo "copy-table: $d/runs.tsv: no such file" >&2; exit 1; }
    done
    for set in file tree; do
      row="| $label | $set |"
      for t in "${tool_list[@]}"; do
        dir=${dirs[0]}
        for d in "${dirs[@]}"; do
          if awk -F'\t' -v t="$t" '$1 == t { f = 1 } END { exit !f }' "$d/runs.tsv"; then dir=$d; fi
        done
        limit=$(grep -o 'limited to [0-9]* s' "$dir/table.md" | grep -o '[0-9]*' || echo "?")
        cell=$(awk -F'\t' -v tool="$t" -v set="$set" -v lim="$limit" -v which="$which" '
          NR > 1 && $1 == tool && $2 == set {
            n++; st[n] = $5
            v[n] = (which == "synced") ? $4 + $8 : $4 + 0
            key[n] = ($5 == "ok") ? v[n] : 1e12 + n
          }
          END {
            if (n == 0) { printf "-"; exit }
            for (i = 1; i <= n; i++) ord[i] = i
            for (i = 2; i <= n; i++)
              for (j = i; j > 1 && key[ord[j - 1]] > key[ord[j]]; j--) {
                x = ord[j]; ord[j] = ord[j - 1]; ord[j - 1] = x
              }
            m = ord[int((n + 1) / 2)]
            if (st[m] == "ok") printf "%.2f", v[m]
            else if (st[m] == "timeout") printf ">%s s", lim
            else printf "%s", st[m]
          }' "$dir/runs.tsv")
        row="$row $cell |"
      done
      echo "$row"
    done
  done
done
