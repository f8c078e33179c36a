// Package enablement computes the enablement state of a systemd unit offline,
// from the files under a root directory, the way
// `systemctl --root=ROOT is-enabled UNIT` of systemd 252 computes it
// (src/shared/install.c, unit_file_lookup_state).
//
// # What it promises
//
// State returns one of the strings systemctl prints: "enabled",
// "enabled-runtime", "linked", "linked-runtime", "alias", "masked",
// "masked-runtime", "static", "indirect", "disabled", "generated" or
// "transient"; "not-found" together with an error wrapping ErrNotFound; or
// "bad" together with an error wrapping ErrBad when systemctl would refuse to
// compute a state (a malformed unit file or drop-in, an invalid alias symlink,
// an alias whose target is missing, an unknown specifier...).
//
// Tree.Enabling says what `systemctl enable` (and so Ignition's preset)
// would still do for a unit that is "disabled", "linked" or
// "enabled-runtime", and Tree.WantEnabled judges a unit declared
// `enabled: true` by it, as Ignition leaves the unit: satisfied, a
// cannot-enable notice, or drift (told apart, where the unit files cannot
// tell, by what the first-boot record kept of the unit's state).
//
// The unit search path is systemd's for the system scope, in its order:
// /etc/systemd/system.control, /run/systemd/system.control,
// /run/systemd/transient, /run/systemd/generator.early, /etc/systemd/system,
// /etc/systemd/system.attached, /run/systemd/system,
// /run/systemd/system.attached, /run/systemd/generator,
// /usr/local/lib/systemd/system, /lib/systemd/system, /usr/lib/systemd/system,
// /run/systemd/generator.late. /lib comes before /usr/lib as in every systemd
// build that looks at /lib at all (split-usr builds such as Debian 12's); on
// merged-usr trees the two are the same directory.
//
// Everything is read through the root its caller opened (ondisk.Root), as
// systemd's chase_symlinks() reads with a root directory: the directories on
// the way are resolved by the kernel, openat2(RESOLVE_IN_ROOT) (absolute
// symlink targets start again at the root, ".." never climbs above it,
// nothing resolves outside of it), and files are opened and links read
// relative to those directories' descriptors, never by a joined path. On top
// of that the package keeps only systemd's own rules: at most 31 links
// followed in last components (CHASE_SYMLINKS_MAX is 32, counted down to 0;
// the kernel bounds a chain of links in directories at 40), and a missing tail appended as written
// (CHASE_NONEXISTENT). [Install] sections are parsed as systemd's config parser
// parses them (comments, continuation lines, quoting, specifiers, drop-ins in
// NAME.d/*.conf and TEMPLATE.d/*.conf). Only the unit asked for, its alias
// chain and its drop-ins are read, plus the listings of the search
// directories and of their .wants/.requires subdirectories.
//
// # What it does not promise
//
//   - No generators are run and no presets are applied: units that only a
//     generator would create are not found, and a unit's state is what is on
//     disk, not what `systemctl preset` would make of it.
//   - The running manager is not asked. On a live host, systemd's own answer
//     (over D-Bus) can differ: for units loaded from memory, transient units
//     that have no file, or after files changed without a daemon-reload.
//   - SYSTEMD_UNIT_PATH and other environment overrides are ignored; only the
//     system scope is supported (no --user, no --global).
//   - It mirrors systemd 252. Later versions also honour UpheldBy= and
//     .upholds/ directories; 252 ignores them, and so does this package.
//   - A Tree holds the directories and listings it read: it describes the
//     tree as it was when first read. Make a new Tree for every check pass
//     (Offline.Pass), and Close it after.
//   - A tree changed while it is read can be seen half old, half new, as
//     systemd would see it; what is read stays inside the root.
//
// Deliberate divergences from systemctl 252 with --root are listed on State.
package enablement
