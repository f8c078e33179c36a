// Package mcd follows the OpenShift machine-config daemon (MCD) from the
// host, so that its updates are not reported as drift: a state machine
// (Machine) fed with the MCD's journal lines (Parse, Journal) and the names
// /etc/machine-config-daemon/currentconfig takes, whose hold is the daemon's
// internal inhibitor "machine-config-daemon".
//
// What the MCD does (machine-config-operator pkg/daemon/update.go:update,
// 4.14 to main; older releases in ../../../shared/research/mcd-transitions.md):
// it logs "Starting update from A to B" through logger(1) (host journal,
// _UID=0, _TRANSPORT=syslog, MESSAGE "machine-config-daemon[PID]: …",
// Go-quoted since 4.17), drains the node (up to an hour, nothing written),
// writes B's files, units and SSH keys, stages the OS, and only then renames
// currentconfig into place (temporary ".currentconfig<digits>" first,
// storeCurrentConfigOnDisk); then it reboots through the transient unit
// machine-config-daemon-reboot.service ("initiating reboot: Node will reboot
// into config B") or reloads services ("Node has Desired Config B, skipping
// reboot", "Update completed for config B …"); after a boot it validates
// the disk ("Validated on-disk state"). On a failure after the rename it
// renames currentconfig back to A first, then writes A's files back.
//
// The machine:
//
//	Idle ──start A→B──▶ Updating(A→B) ──currentconfig=B──▶ Written(B) ──reboot line──▶ Rebooting(B)
//	  ▲                   │   ▲ retry (same budget)          │    │                       │ next boot
//	  │                   │   └──────────                    │    │ rebootless/done B     ▼
//	  ├──── timeout ──────┘                                  │    └──────▶ Idle       Settling(B) ──validated/done──▶ Idle
//	  │                                                       │ currentconfig=A
//	  └──── quiet ──── RollingBack(A) ◀───────────────────────┘ (also from Rebooting)
//
// Every phase but Idle holds reports; the release re-reads the desired state
// and checks everything against it, so a real edit made during the update is
// reported then if it survives. Every phase is bounded (Timeouts): Updating
// from the first start line of its pair (the MCD's retries do not extend
// it; once it ran out the pair's retries hold nothing until currentconfig
// changes), the others from their start, RollingBack by quiet (no MCD line,
// rename or file event). A line from a uid other than 0 is never taken.
//
// The machine is pure and takes time with every input, so the daemon
// recovers its state on a restart by replaying the journal: the previous
// boot's MCD lines, NewBoot, this boot's, then the name currentconfig has.
// Lines imply the rename where the MCD's source order does (a reboot,
// rebootless or done line for B comes only after currentconfig names B).
//
// Without the journal (RenameOnly) only the renames are seen: each rename,
// and each drift that appears between full checks, is held for
// Timeouts.HoldDown; an update whose writing lasts longer is reported until
// its rename. The MCD's transient reboot unit (RebootUnit, ParseRebootUnit)
// is a reboot marker in both modes.
//
// Releases: the start, "initiating reboot", "Node has Desired Config",
// "Update completed" and "Starting to manage node" lines are logSystem's in
// release-4.8 to main alike; "Validated on-disk state" only from 4.12 (glog
// before), so after a reboot on 4.8–4.11 the done line releases. On 4.1–4.6
// the MCD renamed currentconfig before the drain, which can outlast
// Timeouts.Post.
//
// Not followed: the ≤ 4.13 pending-state records
// (MESSAGE_ID=machine-config-daemon-pending-state), on-cluster layering's
// "Starting transition to" (4.14–4.17), HyperShift (which journals no start
// line: follow it with RenameOnly).
package mcd
