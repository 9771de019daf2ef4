#!/bin/sh
# commit_ab.sh A B WORK [PAIRS] [N] — the commits of `bench commit` by two
# builds of bench/bench.c (say, main's engine and a branch's), interleaved:
# PAIRS (default 7) pairs of runs, A then B in even pairs and B then A in odd
# ones, each run one warm-up and 3 rounds of an N-file (default 10000) verb
# commit and staged commit on a fresh copy of WORK's imported store. Prints
# every run's medians, then the median over runs and the B/A ratio, in files/s
# of wall time and per CPU second of the process (steadier on a loaded machine).
set -e
a=$1; b=$2; work=$3; pairs=${4:-7}; n=${5:-10000}
[ -x "$a" ] && [ -x "$b" ] && [ -d "$work" ] || { echo "usage: commit_ab.sh A B WORK [PAIRS] [N]" >&2; exit 2; }
out=$(mktemp)
run() { # label binary
  line=$("$2" commit "$work" 3 "$n" 2>/dev/null | tail -1)
  v=$(echo "$line" | sed -n 's/.*verb median \([0-9]*\) files\/s (\([0-9]*\) per CPU s).*/\1 \2/p')
  s=$(echo "$line" | sed -n 's/.*staged median \([0-9]*\) files\/s (\([0-9]*\) per CPU s).*/\1 \2/p')
  [ -n "$v" ] && [ -n "$s" ] || { echo "commit_ab: $2 failed: $line" >&2; exit 1; }
  echo "$1 $v $s" >> "$out"
  echo "$1 verb $v staged $s (files/s, files per CPU s)"
}
i=0
while [ "$i" -lt "$pairs" ]; do
  if [ $((i % 2)) -eq 0 ]; then run A "$a"; run B "$b"; else run B "$b"; run A "$a"; fi
  i=$((i + 1))
done
med() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
report() { # name column-of-wall column-of-cpu
  wa=$(awk -v c="$2" '$1=="A"{print $c}' "$out" | med); wb=$(awk -v c="$2" '$1=="B"{print $c}' "$out" | med)
  ca=$(awk -v c="$3" '$1=="A"{print $c}' "$out" | med); cb=$(awk -v c="$3" '$1=="B"{print $c}' "$out" | med)
  echo "$1 ($n files): A $wa files/s ($ca per CPU s), B $wb files/s ($cb per CPU s), B/A $(awk -v x="$wb" -v y="$wa" 'BEGIN{printf "%.2f", x/y}') ($(awk -v x="$cb" -v y="$ca" 'BEGIN{printf "%.2f", x/y}') per CPU s)"
}
report verb 2 3
report staged 4 5
rm -f "$out"
