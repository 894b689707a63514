#!/usr/bin/env bash
# Build (once) and install the locked llama-cpp-python into a venv, portably.
#
#   scripts/llama-wheel.sh PYTHON LOCKFILE
#
# (LLAMA_WHEEL_ONLY=1: build the wheel with PYTHON, install nothing; LLAMA_WHEEL_DRY=1: print the
# wheelhouse's folder and stop)
#
# llama.cpp's own default is GGML_NATIVE=ON, i.e. -march=native: a wheel built on a CPU that
# reports AMX or AVX-512 carries those kernels and dies with SIGILL (exit 132) on a machine
# (or VM) that does not run them.  Here the baseline is fixed: x86-64 with AVX2, FMA, F16C and
# BMI2 (Haswell, 2013, and newer), nothing above it (tests/test_llama_portable.py checks the
# built libraries with objdump).  LLAMA_CPU=native opts into -march=native for this machine only.
#
# pip's own cache keys a built wheel by the sdist's hash, not by the flags, so a native wheel
# built once would be reused by every later install: this script never uses pip's cache for
# llama-cpp-python.  It builds into a wheelhouse named by version and flags,
# build/wheels/llama-cpp-python-<version>-<cpu>-<hash of the cmake arguments>/, and installs
# from there.  The sdist itself is checked against the lock's sha256.
set -euo pipefail
python=$1
lock=$2
root=$(cd "$(dirname "$0")/.." && pwd)

# the pinned line and its hashes, as the lock writes them
pin=$(awk -f "$root/scripts/llama-pin.awk" "$lock")
version=$(printf '%s\n' "$pin" | sed -n 's/^llama-cpp-python==\([^ ]*\).*/\1/p')
[ -n "$version" ] || { echo "llama-wheel: no llama-cpp-python pin in $lock" >&2; exit 2; }

# only what the CPU backend loads (libllama, ggml): no multimodal library, tools, tests,
# examples, server binaries, curl or OpenSSL
slim="-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_CURL=OFF \
-DLLAMA_OPENSSL=OFF"
case "${LLAMA_CPU:-portable}" in
  portable) cpu="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
-DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF \
-DGGML_AMX_BF16=OFF" ;;
  native) cpu="-DGGML_NATIVE=ON" ;;
  *) echo "llama-wheel: LLAMA_CPU must be portable or native, not '${LLAMA_CPU}'" >&2; exit 2 ;;
esac
# your own CMAKE_ARGS (e.g. -DGGML_CUDA=on) come last and are part of the wheelhouse's name
args="$slim $cpu ${CMAKE_ARGS:-}"
key=$(printf '%s' "$args" | sha256sum | cut -c1-12)
house="$root/build/wheels/llama-cpp-python-$version-${LLAMA_CPU:-portable}-$key"
if [ -n "${LLAMA_WHEEL_DRY:-}" ]; then echo "$house"; exit 0; fi  # where it would build

if ! ls "$house"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  echo "llama-wheel: building llama-cpp-python $version (${LLAMA_CPU:-portable}) into $house"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  printf '%s\n' "$pin" > "$tmp/pin.txt"
  CMAKE_ARGS="$args" "$python" -m pip wheel -q --no-deps --no-cache-dir --require-hashes \
    --no-binary llama-cpp-python -r "$tmp/pin.txt" -w "$tmp/out"
  printf '%s\n' "$args" > "$tmp/out/CMAKE_ARGS"
  mkdir -p "$(dirname "$house")"
  mv "$tmp/out" "$house"  # the wheelhouse appears only once its wheel is whole
fi
[ -z "${LLAMA_WHEEL_ONLY:-}" ] || { echo "$house"; exit 0; }
# --force-reinstall: a wheel already in the venv (say, a native one) is replaced
"$python" -m pip install -q --no-deps --force-reinstall "$house"/llama_cpp_python-*.whl
