#!/usr/bin/env bash
# Builds Flatiron's FMM3D from the fmm3dpy source distribution on PyPI as a shared library for the
# FMM3D peer of bench/python/peers.py (--fmm3d-lib), the way FMM3D's own makefile builds it:
# gfortran -O3 with OpenMP (the PyPI wheel has neither OpenMP nor AVX: see bench/python/README.md),
# for x86-64-v3 (AVX2 + FMA) so that the library built here also runs on the GPU machine's CPU.
#
#   bench/python/build_fmm3d.sh [--out DIR] [--sdist FILE] [--no-fast-ker] [--march ARCH]
#
# --out     where libfmm3d.so goes (default .bench-data/fmm3d), with libgfortran, libquadmath and
#           libgomp copied beside it and an $ORIGIN rpath, for machines that lack them
# --sdist   fmm3dpy-*.tar.gz (default: pip download fmm3dpy==$FMM3D_VERSION --no-binary fmm3dpy
#           into $FMM3D_SRC, /tmp/ksum-fmm3d-src unless set)
# --no-fast-ker  FMM3D's plain Fortran near field instead of its vectorised C++ kernels
#           (FAST_KER=ON, the default here as in FMM3D's recommended build)
# Needs gfortran, g++, make and (for the download) pip with network. Nothing is vendored: the
# source is fetched and built at run time; CI never runs this.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.bench-data/fmm3d
sdist=""
fast_ker=ON
march=x86-64-v3
version=${FMM3D_VERSION:-2.1.0}
src_dir=${FMM3D_SRC:-/tmp/ksum-fmm3d-src}
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --sdist) sdist=$2; shift 2 ;;
    --no-fast-ker) fast_ker=OFF; shift ;;
    --march) march=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "build_fmm3d.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
for tool in gfortran g++ make; do
  command -v $tool > /dev/null || { echo "build_fmm3d.sh: $tool not found" >&2; exit 1; }
done
mkdir -p "$src_dir" "$out"
if [[ -z "$sdist" ]]; then
  sdist=$(ls "$src_dir"/fmm3dpy-"$version".tar.gz 2> /dev/null || true)
  if [[ -z "$sdist" ]]; then
    # --no-binary for fmm3dpy only: its build requirements (meson-python) may come as wheels.
    python3 -m pip download -q --no-deps --no-binary fmm3dpy -d "$src_dir" "fmm3dpy==$version"
    sdist=$(ls "$src_dir"/fmm3dpy-"$version".tar.gz)
  fi
fi
build=$src_dir/build-$march-fastker$fast_ker
rm -rf "$build" && mkdir -p "$build"
tar -C "$build" --strip-components=1 -xzf "$sdist"
opt="-fPIC -O3 -march=$march -funroll-loops"
# FFLAGS/CFLAGS on the command line replace the makefile's (which add -march=native and, with
# OMP on, -fopenmp): both are given here. DYLIBS still gets -lgomp (and -lstdc++ with FAST_KER).
# The rpath is $ORIGIN (make's $$, the shell's \$), as DT_RPATH so that libgfortran's own
# libquadmath is found beside it too.
make -C "$build" -j "$(nproc)" lib OMP=ON FAST_KER=$fast_ker \
  FFLAGS="$opt -std=legacy -w -fopenmp" CFLAGS="$opt -std=gnu17 -fopenmp" \
  CXXFLAGS="-std=c++11 -DSCTL_PROFILE=-1 $opt -fopenmp" \
  FFLAGS_DYN='-shared -fPIC -Wl,--disable-new-dtags,-rpath,\$$ORIGIN' > "$build/make.log" 2>&1 ||
  { tail -n 30 "$build/make.log"; exit 1; }
cp "$build/lib/libfmm3d.so" "$out/libfmm3d.so"
for lib in libgfortran.so.5 libquadmath.so.0 libgomp.so.1; do
  path=$(gfortran -print-file-name=$lib)
  [[ -f $path ]] && cp -L "$path" "$out/$lib"
done
cat > "$out/BUILD.txt" << EOF
FMM3D $version from $(basename "$sdist"), built $(date -u +%F) on $(uname -m) with
$(gfortran --version | head -n 1); make lib OMP=ON FAST_KER=$fast_ker, flags: $opt -fopenmp
EOF
echo "built $out/libfmm3d.so (FAST_KER=$fast_ker, -march=$march, OpenMP)"
ls -la "$out"
