// Package harness is what every test tier of drift-monitor shares (the
// blackbox, conformance, systemd, packaging and Prometheus tiers, the demo,
// the helper packages test/nspawn and test/ostree, and the unit tests'
// internal/testbus): the built binary, the rule for a tier that cannot run
// here, a private D-Bus, the contract a test reads the daemon's output
// against, and the bounded wait for its records.
//
// A tier's TestMain is os.Exit(harness.Run(m)); its tests then call
// Binary, Repo, the Require functions, IgnitionBinary or ButaneBinary,
// PrivateBus or DialBus, and wait with
// Poll or WaitRecord on a Records source of their own (the daemon's stderr,
// a container's journal).
//
// It promises:
//   - Binary builds ./cmd/drift-monitor once per test binary, into a
//     directory of its own (readable by any user, for tests that run it
//     unprivileged), removed by Run when the tests are done; Repo names a
//     file of the repository whatever the test's directory; RaceBinary is
//     the same build with -race, and TestBinary compiles one package's
//     tests (-race) for a tier that can give them what they need;
//   - IgnitionBinary and ButaneBinary build the real Ignition and Butane of
//     a module version (PinnedIgnition: the one go.mod pins, read with `go
//     list -m`) from the Go module cache, in the module's own directory with
//     its own go.sum, Ignition with cgo (gcc and libblkid-dev, or
//     Unavailable); each is built once per machine into a directory of the
//     user's cache that only the user can write (~/.cache/drift-monitor-tests,
//     keyed by module version, Go version and architecture), serialised
//     with a lock across test binaries, and its -version is checked before
//     every use; IgnitionSource names that module's source in the module
//     cache (its tests/ and butane/docs/ hold cases a tier can run);
//   - Run points STATE_DIRECTORY at a temporary directory for the whole
//     test binary, so that a run of the binary as root never makes the
//     host's digest key in /var/lib/drift-monitor;
//   - Unavailable, RequireTools, RequireRoot and RequireInitialNetNS skip a
//     test with the reason on a developer's machine and fail it when
//     CI=true: CI runs every tier. The RPM's %check is no CI tier: it
//     unsets CI (drift-monitor.spec), so that a test that needs what a
//     build root lacks (root, a bus, the initial network namespace, which
//     alone receives the kernel's audit records) skips there, even where
//     the build itself runs under a CI service that sets CI=true;
//   - PrivateBus runs a dbus-daemon on a socket in a fresh temporary
//     directory, and GuardBus, which PrivateBus and DialBus call, refuses
//     any address that is not one unix socket path, or whose socket is the
//     machine's real system bus: a test cannot reach it by accident;
//     DialBus and BusDialer are the one way a test connects (EXTERNAL, as
//     the test's uid, then Hello); NoBus is the environment setting for a
//     binary that must have no bus;
//   - the MESSAGE_ID constants and the JSON report types (Report of
//     check, ReconcileReport of reconcile, StatusReport of status) are
//     spelled out here, not imported from internal/: they are a contract
//     with whoever reads the journal or the JSON, and a change on the
//     daemon's side must fail a test (contract_test.go compares the ids
//     with internal/journal's; the tiers assert on the reports' fields);
//   - Poll, WaitRecord and Await wait with a bound, never a bare sleep:
//     they look again when woken, or after an interval that grows from 10ms
//     to 250ms, and stop at once when told the state cannot come; a failure
//     names what was awaited and the last observation.
//
// It does not promise:
//   - the binary `make build` makes: Binary builds without the Makefile's
//     version flags, so the binary calls itself "dev";
//   - a bus that can be stopped and restarted at the same address (the
//     unit tests' internal/testbus runs one, behind the same guard);
//   - isolation from the host beyond the above: each tier says what else it
//     keeps away from the machine (test/nspawn, for example, a container);
//   - that a skipped test was worth skipping: a reason is printed, and only
//     CI=true turns it into a failure;
//   - anything about the records' order across sources (stderr and the
//     journal are read separately, each in its own order).
package harness
