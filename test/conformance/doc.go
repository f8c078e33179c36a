// Package conformance is the tier that proves `drift-monitor check` against
// roots written by the real Ignition: Debian's ignition package (Ignition
// 2.14) for specs 3.0.0 to 3.3.0, and the Ignition of the version go.mod
// pins, built from the Go module cache by test/harness (IgnitionBinary),
// for spec 3.4.0 and later and for Butane inputs: the writer in CI is the
// writer on today's hosts (harness_test.go, writerFor).
//
// Every case provisions a fresh temporary root the way a first boot does:
// Ignition's fetch-offline and files stages with `-platform file`, then
// `systemctl --root=ROOT preset` for the units the config enables or disables,
// under a Fedora image's preset policy. The tests then run the built binary
// as `drift-monitor check --root ROOT --config CFG --format json` and assert
// the exact set of drifts it reports: none on a freshly provisioned root,
// exactly the mutated entries after a mutation, none after changes the
// contract says are not drift.
//
// TestPeerSuite runs Ignition's own blackbox cases (testdata/peer-suites):
// Ignition 2.14's at spec 3.3.0 with Debian's 2.14, Ignition 2.27's at 3.4.0,
// 3.5.0 and 3.6.0 with 2.27; every answer other than the rule (a positive
// case checks clean, a negative one does not) is listed, with its reason,
// in testdata/peer-suites/expectations.json. TestButaneExamples applies
// every example of Butane's documentation (the pinned module's
// butane/docs/examples.md) with the pinned Ignition and checks the root
// against the same Butane file; testdata/butane-examples.json lists, with
// why, those that cannot check clean here.
//
// It promises: an Ignition-provisioned root reads as clean wherever Ignition
// did what the config says; where an Ignition release does not (Ignition
// 2.14 and setuid, setgid and sticky bits), a test documents what it really
// writes and that drift-monitor reports it. It does not promise anything
// about a live host (kernel arguments, systemd over D-Bus): that is the
// systemd tier's job.
//
// The tier needs root (Ignition chowns), the Ignition binary at
// /usr/lib/dracut/modules.d/30ignition/ignition, and gcc with libblkid-dev
// to build the pinned Ignition (about a minute, once per machine). Without
// them it skips, except when CI=true, where it fails.
//
// The package holds only tests; this file exists for its documentation.
package conformance
