// Package conformance is the tier that proves `drift-monitor check` against
// roots written by the real Ignition binary (Debian's ignition package,
// Ignition 2.14, specs up to 3.3.0).
//
// Every case provisions a fresh temporary root the way a first boot does:
// Ignition's fetch-offline and files stages with `-platform file`, then
// `systemctl --root=ROOT preset` for the units the config enables or disables.
// The tests then run the built binary as `drift-monitor check --root ROOT
// --config CFG --format json` and assert the exact set of drifts it reports:
// none on a freshly provisioned root, exactly the mutated entries after a
// mutation, none after changes the contract says are not drift.
//
// It promises: an Ignition-provisioned root reads as clean wherever Ignition
// did what the config says; where Ignition 2.14 does not (setuid, setgid and
// sticky bits), a test documents what it really writes and that drift-monitor
// reports it. It does not promise anything about a live host (kernel
// arguments, systemd over D-Bus): that is the systemd tier's job.
//
// The tier needs root (Ignition chowns) and the Ignition binary at
// /usr/lib/dracut/modules.d/30ignition/ignition. Without them it skips, except
// when CI=true, where it fails.
//
// The package holds only tests; this file exists for its documentation.
package conformance
