#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (as root, or with sudo):
#   bash setup.sh demo   installs what is missing, builds, runs the main job on the embedded demo input
#   bash setup.sh test   installs what is missing, builds, runs the whole test suite (what CI runs)
set -euo pipefail
cd "$(dirname "$0")"

mode=${1:-}
case "$mode" in demo|test|build) ;; *) echo "usage: bash setup.sh demo|test|build" >&2; exit 2 ;; esac

# Debian 12 packages the project needs: one list, read here and by the guard test
# tests/deps/check_packages.sh (../shared/DESIGN.md, "Measured facts about the platform").
mapfile -t packages < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' resources/setup/debian-packages.txt)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset default
cmake --build --preset default -j"$jobs"

case "$mode" in
  demo)
    # The studio on the embedded demo library when a display exists; without one, the same pipeline
    # headless, writing plan.json, comparison.csv and PNG renderings into routepack-demo/.
    if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
      ./build/app/routepack-studio
    else
      ./build/app/routepack-studio --headless-out routepack-demo
    fi
    ;;
  test)
    ctest --preset default
    # The whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer (clang 14; Python
    # tests with the ASan runtime preloaded), with every byte parser's libFuzzer harness in the same
    # build: its seed corpus, the inputs that once crashed it, and a few seconds of fuzzing (tests/fuzz).
    cmake --preset asan
    cmake --build --preset asan -j"$jobs"
    ctest --preset asan
    ;;
esac
