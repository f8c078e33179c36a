// Package repair is the tier that attacks `drift-monitor reconcile` and
// `drift-monitor adopt`, which run as root and write the host's most
// sensitive files and the desired state every later check trusts: each
// test builds a temporary root, runs the built binary on it as an admin or
// an attacker would, and asserts what the root holds afterwards — with the
// real shadow-utils (Debian's passwd package) doing the account repairs,
// and, where a case is about what Ignition writes, the real Ignition that
// go.mod pins (test/harness builds it) writing the root first.
//
// It promises a test per attack: a value that is not one field of the
// account files never reaches a tool (and `check` refuses the config that
// holds it); account repairs come first and the nodes are planned against
// the accounts as they leave them, with the last word a real check; one
// run converges, its dry run planning the same steps; a dry run never
// promises what the run cannot do; labels are those of the path as it
// resolves in the root; a declared verification hash is verified for every
// source read; adopt never leaves the root and validates before it writes;
// a config that another user could have written is refused. The property
// over every mutation of the conformance corpus (one reconcile, then a
// tree equal to Ignition's) lives with that corpus, in test/conformance
// (TestReconcile).
//
// It needs root (the tools chown and chroot) and shadow-utils; the label
// case needs Debian's SELinux policy, setfiles, and the toolchain that
// builds Ignition. Without them it skips, except when CI=true, where it
// fails.
//
// The package holds only tests; this file exists for its documentation.
package repair
