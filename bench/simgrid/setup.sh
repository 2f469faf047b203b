#!/usr/bin/env bash
# Builds the project's library against SimGrid SMPI (MPI simulated on a model of a cluster),
# so that its MPI traffic can be timed at rank counts this machine cannot run for real.
#
#   usage: bench/simgrid/setup.sh [WORK]     (run from the project root; WORK defaults to
#          target/simgrid). Produces WORK/lib/libdistreshape.so linked against libsimgrid and
#          WORK/drsim and WORK/drgrid (the drivers in this folder). Then see run.sh.
#
# rsmpi needs two small patches for SMPI (its mpi.h differs from MPICH's): in mpi-sys,
# MPI_COMM_WORLD is a run-time variable and MPI_COMM_SELF a function call, so the C shim
# cannot hold them as constants, and MPI_SUCCESS is an enum member; in mpi, one prototype
# (MPI_Comm_spawn_multiple) takes non-const pointers. This script applies them to copies of
# the crates from cargo's registry and points cargo at the copies with --config patch
# entries, so the project's own Cargo.toml stays untouched.
set -euo pipefail
ROOT=$(pwd)
[ -f "$ROOT/Cargo.toml" ] || { echo "run this from the project root" >&2; exit 1; }
KIT=$(cd "$(dirname "$0")" && pwd)
WORK=$(mkdir -p "${1:-$ROOT/target/simgrid}" && cd "${1:-$ROOT/target/simgrid}" && pwd)

command -v smpicc >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libsimgrid-dev; }

cargo fetch --manifest-path "$ROOT/Cargo.toml" >/dev/null
REG=$(ls -d "$HOME"/.cargo/registry/src/*/ | head -n1)
MPISYS=$(ls -d "$REG"mpi-sys-0.2.* | sort -V | tail -n1)
MPI=$(ls -d "$REG"mpi-0.8.* | sort -V | tail -n1)

rm -rf "$WORK/mpi-sys" "$WORK/mpi"
cp -r "$MPISYS" "$WORK/mpi-sys"
cp -r "$MPI" "$WORK/mpi"
python3 - "$WORK" <<'PY'
import re, sys
w = sys.argv[1]
def edit(path, old, new):
    s = open(path).read()
    assert old in s, f"{path}: expected text not found: {old!r}"
    open(path, "w").write(s.replace(old, new))
edit(f"{w}/mpi-sys/src/rsmpi.c", "const MPI_Comm RSMPI_COMM_WORLD = MPI_COMM_WORLD;",
     "/* SMPI: MPI_COMM_WORLD is a run-time variable; see build.rs. */")
edit(f"{w}/mpi-sys/src/rsmpi.c", "const MPI_Comm RSMPI_COMM_SELF = MPI_COMM_SELF;",
     "const MPI_Comm RSMPI_COMM_SELF = MPI_COMM_NULL; /* SMPI: a function call there */")
edit(f"{w}/mpi-sys/build.rs", "    bindings.write_to_file(out_file).unwrap();",
     '''    let text = bindings.to_string().replace(
        "pub static RSMPI_COMM_WORLD: MPI_Comm;",
        "#[link_name = \\"MPI_COMM_WORLD\\"]\\n    pub static RSMPI_COMM_WORLD: MPI_Comm;");
    std::fs::write(out_file, text).unwrap();''')
inc = 'include!(concat!(env!("OUT_DIR"), "/functions_and_types.rs"));'
edit(f"{w}/mpi-sys/src/lib.rs", inc, inc + "\n/// SMPI: an enum member there.\npub const MPI_SUCCESS: u32 = 0;")
p = f"{w}/mpi/src/collective.rs"
s = open(p).read()
i = s.index("MPI_Comm_spawn_multiple")
j = s.index("infos.as_ptr(),", i) + len("infos.as_ptr(),")
seg = s[i:j].replace("maxprocs.as_ptr(),", "maxprocs.as_ptr() as *mut _,").replace("infos.as_ptr(),", "infos.as_ptr() as *mut _,")
open(p, "w").write(s[:i] + seg + s[j:])
PY

mkdir -p "$WORK/pkgconfig"
printf 'Name: smpi\nDescription: SimGrid SMPI\nVersion: 3.32\nCflags: -I/usr/include/smpi\nLibs: -lsimgrid\n' > "$WORK/pkgconfig/smpi.pc"

# The patches rewrite Cargo.lock's entries for mpi and mpi-sys: keep the committed one.
cp "$ROOT/Cargo.lock" "$WORK/Cargo.lock.orig"
CARGO_TARGET_DIR="$WORK/target" MPI_PKG_CONFIG="$WORK/pkgconfig/smpi.pc" \
  cargo build --release --lib --manifest-path "$ROOT/Cargo.toml" \
  --config "patch.crates-io.mpi-sys.path=\"$WORK/mpi-sys\"" \
  --config "patch.crates-io.mpi.path=\"$WORK/mpi\""
cp "$WORK/Cargo.lock.orig" "$ROOT/Cargo.lock"
mkdir -p "$WORK/lib"
cp "$WORK/target/release/libdistreshape.so" "$WORK/lib/"
# The driver records the library's SONAME (libdistreshape.so.ABI): provide that name.
soname=$(objdump -p "$WORK/lib/libdistreshape.so" | awk '/SONAME/ {print $2}')
ln -sf libdistreshape.so "$WORK/lib/$soname"
for driver in drsim drgrid; do
  smpicc -O2 -Wall -I"$ROOT/include" "$KIT/$driver.c" "$KIT/smpi_main_thread.c" -o "$WORK/$driver" -L"$WORK/lib" -ldistreshape -Wl,-rpath,"$WORK/lib"
done
for i in $(seq 0 1023); do echo "node-$i"; done > "$WORK/hostfile"
echo "built $WORK/drsim and $WORK/drgrid against SMPI; run bench/simgrid/run.sh"
