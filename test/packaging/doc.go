// Package packaging is the packaging tier: it tests what the RPM installs and
// how it behaves installed, from the outside.
//
//   - rpm_test.go: `make rpm` builds the SRPM and the binary RPM offline from
//     a tarball with vendored modules, and as root, with CI=true, its %check
//     (the unit tests, in the build's own network namespace) passes; the
//     RPM holds exactly the expected
//     files with the expected modes, owners and flags, its scriptlets are the
//     systemd ones, and rpmlint (with packaging/rpmlint.toml) reports no
//     error and no warning the spec does not explain.
//   - generated_test.go: the checked-in journal catalog and the man page's
//     MESSAGE_ID list equal what tools/gencatalog generates.
//   - manpage_test.go: drift-monitor(8) is clean roff and names every
//     command and every option the built binary registers, every MESSAGE_ID
//     and every file the package installs.
//   - buspolicy_test.go: the shipped D-Bus policy on a private dbus-daemon
//     configured like the system bus: root may own the name and call every
//     method; an unprivileged user (uid 65534) may not, but may read the
//     properties, introspect, ping and receive signals.
//   - container_test.go: the RPM installed with rpm in a throwaway systemd
//     (test/nspawn): preset, start, a drift explained by journalctl -x, an
//     upgrade that restarts the daemon while inhibitors stay held, an erase
//     that stops and disables it, and systemd-analyze security.
//   - ostree_test.go: the package on rpm-ostree. Its %pre, %post and
//     %posttrans run in the bubblewrap sandbox rpm-ostree runs them in (no
//     network, /var read-only, /run a tmpfs, SYSTEMD_OFFLINE=1, a systemctl
//     that passes only preset): each succeeds with no output and the preset
//     enables the unit. Its files, committed as /usr with its /etc as
//     /usr/etc, deploy in a real ostree sysroot with desired.d root's only
//     and the preset's link, over a base deployment keeping a config put in
//     /etc before the reboot; the next release deploys over them keeping an
//     administrator's configs and a `systemctl disable`, with /var/.updated
//     gone so that the boot rebuilds the journal catalog from the new /usr.
//
// Tests that need root, rpmbuild, dbus-daemon, systemd-nspawn, bwrap or ostree skip with the
// reason where those are missing, and fail instead when CI=true.
package packaging
