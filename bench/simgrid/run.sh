#!/usr/bin/env bash
# Runs the driver under SMPI on the simulated 1024-host fat tree (platform.xml).
#   usage: bench/simgrid/run.sh "16 64" [seed|split|pencils|bricks|fused ...]   (from the project root, after setup.sh)
#   (seed and split: slabs, drsim; pencils, bricks and fused: grid layouts, drgrid, on P = q*q and c^3)
#   env:   WORK (default target/simgrid), SIM_TIMEOUT (default 900 s), SMPI_OPTS (extra --cfg=...),
#          DRGRID_WORLD=0 (drgrid without the world MPI_Alltoallv baseline: ratio=-1; for P = 1024)
# Prints one RESULT line per run: simulated seconds (max over ranks) of dr_plan_execute and of
# memcpy of the kept elements + MPI_Alltoallv of the same per-peer volumes, and their ratio.
# Computation is not simulated (copies cost 0): it compares message patterns only.
# Cost here: P=64 split takes ~2 s of real time and ~1.8 GB, P=128 a few minutes; P=256 did not finish in 15 min.
set -uo pipefail
KIT=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(pwd)/target/simgrid}
PS=${1:-"16 64"}; shift || true
CASES=${*:-"seed split"}
for P in $PS; do
  for c in $CASES; do
    driver=drsim
    case $c in pencils|bricks|fused) driver=drgrid ;; esac
    timeout "${SIM_TIMEOUT:-900}" smpirun -np "$P" -platform "$KIT/platform.xml" -hostfile "$WORK/hostfile" \
      --cfg=smpi/simulate-computation:no ${SMPI_OPTS:-} "$WORK/$driver" "$c" 2 2>&1 | grep -E '^(RESULT|MANUAL|PAIRWISE)' \
      || echo "case=$c P=$P: failed or timed out"
  done
done
