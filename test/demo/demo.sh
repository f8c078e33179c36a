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
cgdirs=()
cleanup() {
  if [ -n "${init:-}" ]; then nsenter -t "$init" -a systemctl poweroff >/dev/null 2>&1 || true; fi
  if [ -n "$nspawn_pid" ]; then
    for _ in $(seq 100); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$nspawn_pid" 2>/dev/null || true
    wait "$nspawn_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
  # Deepest cgroups first; nspawn leaves empty payload/supervisor ones.
  for d in "${cgdirs[@]}"; do
    find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
}
trap cleanup EXIT

# systemd-nspawn --keep-unit puts the container's processes into its own
# cgroup: give it a fresh one, or `systemctl status` inside cannot list them.
cgdirs=()
while read -r h; do
  mkdir -p "$h/$name" && cgdirs+=("$h/$name")
done < <(awk '$9 == "cgroup2" || ($9 == "cgroup" && $NF ~ /name=systemd/) {print $5}' /proc/self/mountinfo)

say "booting a throwaway systemd ($name)"
CGDIRS="${cgdirs[*]}" sh -c 'for d in $CGDIRS; do echo $$ >"$d/cgroup.procs"; done; exec "$@"' sh \
  systemd-nspawn -D / --volatile=yes --overlay=/usr::/usr -b --register=no --keep-unit -M "$name" \
  --bind-ro="$bin":/usr/bin/drift-monitor \
  --bind-ro="$top/units/drift-monitor.service":/usr/lib/systemd/system/drift-monitor.service \
  --bind-ro="$top/test/demo/example.ign":/usr/lib/drift-monitor/desired.d/50-example.ign \
  --bind-ro="$top/packaging/org.driftmonitor.DriftMonitor1.conf":/usr/share/dbus-1/system.d/org.driftmonitor.DriftMonitor1.conf \
  --bind-ro="$top/packaging/drift-monitor.catalog":/usr/lib/systemd/catalog/drift-monitor.catalog \
  -- systemd.firstboot=off >"$work/nspawn.log" 2>&1 &
nspawn_pid=$!
init=
# init is the child of systemd-nspawn that is PID 1 in its own namespace and
# already runs systemd (the first child is a short-lived helper).
for _ in $(seq 300); do
  for c in $(cat /proc/$nspawn_pid/task/*/children 2>/dev/null); do
    if [ "$(cat /proc/$c/comm 2>/dev/null)" = systemd ] && grep -Eq '^NSpid:.*[[:space:]]1$' /proc/$c/status 2>/dev/null; then
      init=$c
    fi
  done
  [ -n "$init" ] && break
  sleep 0.1
done
[ -n "$init" ] || { cat "$work/nspawn.log"; echo "container did not start" >&2; exit 1; }
inside() { nsenter -t "$init" -a "$@"; }
for _ in $(seq 300); do
  s=$(inside systemctl is-system-running 2>/dev/null || true)
  case "$s" in running|degraded) break ;; esac
  sleep 0.1
done
echo "systemd is $s"

say "provisioning the example host (what Ignition would have written)"
inside sh -c '
  mkdir -p /etc/demo && chmod 755 /etc/demo
  printf "hello world\n" >/etc/etc-file
  printf "server time.example.com iburst\ndriftfile /var/lib/chrony/drift\n" >/etc/chrony.conf
  printf "s3cr3t-token\n" >/etc/demo/secret.token && chmod 600 /etc/demo/secret.token
  ln -sf /etc/chrony.conf /etc/demo/current
  printf "[Unit]\nDescription=Demo\n\n[Service]\nExecStart=/bin/true\nRemainAfterExit=yes\n\n[Install]\nWantedBy=multi-user.target\n" >/etc/systemd/system/demo.service
  systemctl daemon-reload && systemctl enable demo.service 2>/dev/null
'
inside drift-monitor check && echo "(drift-monitor check: exit 0, no drift)"

inside journalctl --update-catalog
say "systemctl restart drift-monitor"
# First boot applied the presets, so the service already started before the
# files were provisioned (and reported them missing): start it afresh.
inside systemctl restart drift-monitor
inside systemctl status drift-monitor --no-pager | sed -n 1,12p

wait_status() {
  for _ in $(seq 100); do
    st=$(inside systemctl show -p StatusText --value drift-monitor)
    case "$st" in $1*) echo "STATUS: $st"; return 0 ;; esac
    sleep 0.1
  done
  echo "status did not become '$1': $st" >&2; return 1
}

say "drift: printf 'not-the-data' > /etc/etc-file; chmod 644 -> 640 on the secret"
inside sh -c "printf 'not-the-data' > /etc/etc-file; chmod 640 /etc/demo/secret.token"
wait_status "Drift: 2 paths differ"
inside systemctl status drift-monitor --no-pager | sed -n 1,6p

say "drift-monitor status (asks the daemon over D-Bus; exit 1: drifted)"
inside drift-monitor status || true

say "journalctl -x explains a record (the message catalog)"
inside journalctl -u drift-monitor -x --no-pager -n 4 MESSAGE_ID=d9919dc81c6b4fe685c3babdbad8d8d9 | tail -n 14

say "drift: systemctl disable demo.service (seen through systemd's D-Bus signal)"
inside systemctl disable demo.service 2>/dev/null
wait_status "Drift: 3 paths differ"

say "restoring everything"
inside sh -c "printf 'hello world\n' > /etc/etc-file; chmod 600 /etc/demo/secret.token; systemctl enable demo.service 2>/dev/null"
wait_status "No drift"

say "journalctl -u drift-monitor (this run of the service)"
inv=$(inside systemctl show -p InvocationID --value drift-monitor)
inside journalctl _SYSTEMD_INVOCATION_ID="$inv" --no-pager -o short
say "one record in full: journalctl -u drift-monitor DRIFT_PATH=/etc/etc-file MESSAGE_ID=… -o verbose"
# MESSAGE_ID d9919dc8…: "drift detected" (see journalctl -x, or the catalog)
inside journalctl -u drift-monitor DRIFT_PATH=/etc/etc-file MESSAGE_ID=d9919dc81c6b4fe685c3babdbad8d8d9 --no-pager -o verbose -n 1 | grep -E '^ +(MESSAGE_ID|PRIORITY|DRIFT_[A-Z]+|MESSAGE)=' || true

say "drift-monitor check --format json (the update tool's preflight)"
inside sh -c "printf 'x' > /etc/etc-file"
inside drift-monitor check --format json || echo "(exit $?: drift found)"
say "done; the container is thrown away"
