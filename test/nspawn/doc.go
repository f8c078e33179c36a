// Package nspawn boots throwaway systemd containers for drift-monitor's
// systemd tier: tests that need a real systemd (units, journald, the system
// bus, logind) on a machine where systemd is not PID 1.
//
// Boot starts
//
//	systemd-nspawn -D / --volatile=yes --overlay=/usr::/usr -b --register=no \
//	  --keep-unit -M NAME [--bind-ro=SRC:DST]... [--bind=SRC:DST]... \
//	  -- systemd.firstboot=off ...
//
// (or, with Options.Directory, `-D DIRECTORY -b ...`: a tree of its own, such
// as an ostree deployment, booted as it is), waits until `systemctl
// is-system-running` answers running or degraded, and
// registers a cleanup that powers the container off. Commands run inside
// through `nsenter -t INIT -a`.
//
// It promises:
//   - every container boots the host's own /usr with a fresh tmpfs root, so
//     /etc, /var and /run start almost empty and anything written under /usr
//     lands in a throwaway overlay layer; nothing a test writes inside reaches
//     the host, except through a Bind mount the test asked for (or, with
//     Options.Directory, into that tree, which the test owns);
//   - every container gets a unique machine name (dm-e2e-PID-N, also its
//     hostname) and its own cgroup subtree, so several can run at once
//     without one container's systemd seeing the other's units;
//   - when the test ends, the container is powered off (SIGKILLed if it does
//     not stop within 30s) and its cgroups are removed: no process, mount or
//     cgroup is left on the host. A leftover is reported as a test error.
//     The exception is systemd-nspawn's own runtime directories,
//     /run/systemd/nspawn/propagate and /run/systemd/nspawn-root: empty,
//     created by the first container and shared by all, so never removed
//     (removing one could break a container starting at that moment);
//   - every wait is bounded, and a failure says what was last observed and
//     shows the container's console log or journal.
//
// It does not promise:
//   - an image other than the host's: the container runs the host's /usr
//     (or a Directory the test built from it), so it has exactly the host's
//     systemd (252 on Debian 12) and binaries;
//   - networking: the container shares the host's network namespace;
//   - that a process started with Run is supervised by the container's
//     systemd: nsenter puts it in the container's namespaces but leaves it
//     in the test's cgroup. Start the program under test as a unit
//     (`systemctl start`, `systemd-run`) to get Restart=, journald fields
//     and cgroup tracking as on a host. A Run cancelled by its context kills
//     the command, not the processes it started: they die with the container;
//   - a clean shutdown of the services under test: a service that takes
//     longer than the 30s bound to stop is killed with the container;
//   - running on a host where systemd is PID 1 the way it runs on CI: it
//     was written for a host without systemd (Debian 12, root), where
//     nothing else manages cgroups.
//
// The tier needs root with CAP_SYS_ADMIN, systemd-nspawn (package
// systemd-container), nsenter, the systemd and dbus packages on the host, and
// a writable systemd cgroup hierarchy. Require (called by Boot) checks that,
// including one cheap container start, and skips the test with the reason
// when something is missing, or fails it when CI=true.
package nspawn
