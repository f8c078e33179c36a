#!/usr/bin/env bash
# make demo: drift-monitor in a throwaway systemd, on a built-in example.
# The demo is TestDemo (demo_test.go), on test/harness and test/nspawn; with
# DM_DEMO=1 it tells its story on standard output. Needs root; installs
# systemd-container and dbus if missing.
set -euo pipefail
cd "$(dirname "$0")/../.."

say() { printf '\n\033[1m### %s\033[0m\n' "$*"; }
[ "$(id -u)" = 0 ] || { echo "make demo needs root (systemd-nspawn)" >&2; exit 1; }
if ! command -v systemd-nspawn >/dev/null || ! command -v dbus-daemon >/dev/null; then
  say "installing systemd-container and dbus"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd-container dbus >/dev/null
fi
DM_DEMO=1 exec "${GO:-go}" test -count=1 -v -run '^TestDemo$' ./test/demo
