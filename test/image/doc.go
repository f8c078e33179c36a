// Package image holds the tests of drift-monitor's comparison of /etc with
// the OS image against the real tools (research/image-drift.md, "Oracles"):
// random trees on a real ostree sysroot against `ostree admin config-diff`,
// packages installed with `rpm --root` against `rpm -Va`, and real
// deployments against what ostree's /etc merge does. They need root, ostree,
// rpm and rpmbuild: skipped without them, failed when CI=true.
package image
