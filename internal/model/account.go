package model

// The kinds of the entries of passwd.users and passwd.groups.
const (
	KindUser  Kind = "user"
	KindGroup Kind = "group"
)

// Account is what a passwd.users or passwd.groups item declares, as
// Ignition applies it. Nil (or, for Groups, empty) fields are not checked.
//
// Ignition v2.14.0 and v2.27.0 alike (internal/exec/util/passwd.go,
// EnsureUser and SetPasswordHash, the same for users in both): a user that
// exists is usermod'ed with --uid, --comment, --gid, --groups, --shell,
// --home --move-home and --password for each declared field, a user that
// does not is useradd'ed with the same fields; --no-create-home, --no-user-group,
// --system and --no-log-init reach useradd only, so they shape a user at
// creation and are nothing to an account that already existed (as core on
// Fedora CoreOS does): they are not checked, since nothing on disk tells an
// account Ignition created from one it found. A groups item is groupadd'ed
// with --gid and --password, or (v2.27.0: EnsureGroup; up to v2.24.0 it
// only ever runs groupadd, which fails on an existing group) groupmod'ed
// with them; followed as v2.27.0, which go.mod pins, does it. Up to
// v2.24.0 a group created without a declared hash got --password "*", in
// v2.27.0 none: creation-only either way, and not checked.
type Account struct {
	Name string
	// Absent: shouldExist false (spec 3.2.0 and later). Ignition runs
	// `userdel --remove` or `groupdel` on an account that exists: it must
	// not exist, and nothing else is declared.
	Absent bool
	// ID is the declared uid (users) or gid (groups).
	ID *int
	// Gecos, Home, Shell and PrimaryGroup are declared only when non-empty
	// (appendIfStringSet: util.NotEmpty). PrimaryGroup is a name or a
	// number, as useradd --gid takes it.
	Gecos, Home, Shell, PrimaryGroup *string
	// Groups is the exact supplementary list (usermod --groups without
	// --append); nil when none is declared: Ignition passes --groups only
	// for a non-empty list.
	Groups []string
	// PasswordHash is the hash /etc/shadow (users) or /etc/gshadow
	// (groups) must hold. For a user, an empty declared hash is "*" (both
	// EnsureUser and SetPasswordHash); for a group, an empty one is not
	// applied (util.NotEmpty), so it is not declared.
	PasswordHash *string
	// Creation holds what reaches useradd and groupadd only: not checked,
	// but what a user or group put back is created with.
	Creation Creation
}

// Creation is the creation-only flags of an account: useradd's
// --no-create-home (else --create-home), --no-user-group, --system and
// --no-log-init; groupadd's --system.
type Creation struct {
	NoCreateHome, NoUserGroup, System, NoLogInit bool
}

// ID of an account entry: its kind and name.
func accountID(k Kind, name string) string { return string(k) + ":" + name }
