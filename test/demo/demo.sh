#!/usr/bin/env bash
# make demo: drift-monitor in a throwaway systemd, on a built-in example.
# Boots a real systemd in systemd-nspawn (the host's /usr, a volatile /),
# provisions the example's files, starts the daemon as a unit would, then
# drifts a file and restores it while you watch `systemctl status` and the
# journal. Needs root; installs systemd-container and dbus if missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
bin=$top/bin/drift-monitor

say() { printf '\n\033[1m### %s\033[0m\n' "$*"; }
[ "$(id -u)" = 0 ] || { echo "make demo needs root (systemd-nspawn)" >&2; exit 1; }
if ! command -v systemd-nspawn >/dev/null || ! command -v dbus-daemon >/dev/null; then
  say "installing systemd-container and dbus"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd-container dbus >/dev/null
fi
[ -x "$bin" ] || make build

name=dm-demo-$$
work=$(mktemp -d)
nspawn_pid=
cleanup() {
  if [ -n "${init:-}" ]; then nsenter -t "$init" -a systemctl poweroff >/dev/null 2>&1 || true; fi
  if [ -n "$nspawn_pid" ]; then
    for _ in $(seq 100); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$nspawn_pid" 2>/dev/null || true
    wait "$nspawn_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

say "booting a throwaway systemd ($name)"
systemd-nspawn -D / --volatile=yes --overlay=/usr::/usr -b --register=no --keep-unit -M "$name" \
  --bind-ro="$bin":/usr/bin/drift-monitor \
  --bind-ro="$top/units/drift-monitor.service":/usr/lib/systemd/system/drift-monitor.service \
  --bind-ro="$top/test/demo/example.ign":/usr/lib/drift-monitor/desired.d/50-example.ign \
  -- systemd.firstboot=off >"$work/nspawn.log" 2>&1 &
nspawn_pid=$!
init=
for _ in $(seq 300); do
  init=$(cat /proc/$nspawn_pid/task/*/children 2>/dev/null | awk '{print $1; exit}')
  [ -n "$init" ] && break
  sleep 0.1
done
[ -n "$init" ] || { cat "$work/nspawn.log"; echo "container did not start" >&2; exit 1; }
in() { nsenter -t "$init" -a "$@"; }
for _ in $(seq 300); do
  s=$(in systemctl is-system-running 2>/dev/null || true)
  case "$s" in running|degraded) break ;; esac
  sleep 0.1
done
echo "systemd is $s"

say "provisioning the example host (what Ignition would have written)"
in sh -c '
  mkdir -p /etc/demo && chmod 755 /etc/demo
  printf "hello world\n" >/etc/etc-file
  printf "server time.example.com iburst\ndriftfile /var/lib/chrony/drift\n" >/etc/chrony.conf
  printf "s3cr3t-token\n" >/etc/demo/secret.token && chmod 600 /etc/demo/secret.token
  ln -sf /etc/chrony.conf /etc/demo/current
  printf "[Unit]\nDescription=Demo\n\n[Service]\nExecStart=/bin/true\nRemainAfterExit=yes\n\n[Install]\nWantedBy=multi-user.target\n" >/etc/systemd/system/demo.service
  systemctl daemon-reload && systemctl enable demo.service 2>/dev/null
'
in drift-monitor check && echo "(drift-monitor check: exit 0, no drift)"

say "systemctl start drift-monitor"
in systemctl start drift-monitor
in systemctl status drift-monitor --no-pager | sed -n 1,12p

wait_status() {
  for _ in $(seq 100); do
    st=$(in systemctl show -p StatusText --value drift-monitor)
    case "$st" in $1*) echo "STATUS: $st"; return 0 ;; esac
    sleep 0.1
  done
  echo "status did not become '$1': $st" >&2; return 1
}

say "drift: printf 'not-the-data' > /etc/etc-file; chmod 644 -> 640 on the secret"
in sh -c "printf 'not-the-data' > /etc/etc-file; chmod 640 /etc/demo/secret.token"
wait_status "Drift: 2 paths differ"
in systemctl status drift-monitor --no-pager | sed -n 1,6p

say "drift: systemctl disable demo.service (seen through systemd's D-Bus signal)"
in systemctl disable demo.service 2>/dev/null
wait_status "Drift: 3 paths differ"

say "restoring everything"
in sh -c "printf 'hello world\n' > /etc/etc-file; chmod 600 /etc/demo/secret.token; systemctl enable demo.service 2>/dev/null"
wait_status "No drift"

say "journalctl -u drift-monitor"
in journalctl -u drift-monitor --no-pager -o short
say "one record in full: journalctl -u drift-monitor DRIFT_PATH=/etc/etc-file -o verbose"
in journalctl -u drift-monitor DRIFT_PATH=/etc/etc-file --no-pager -o verbose -n 1 | grep -E '^ +(MESSAGE_ID|PRIORITY|DRIFT_[A-Z]+|MESSAGE)=' || true

say "drift-monitor check --format json (the update tool's preflight)"
in sh -c "printf 'x' > /etc/etc-file"
in drift-monitor check --format json || echo "(exit $?: drift found)"
say "done; the container is thrown away"
