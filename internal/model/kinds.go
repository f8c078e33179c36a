package model

import "slices"

// Meaning is what entries of one Kind mean to every consumer: one row of
// Kinds. A consumer that must tell kinds apart to decide something (what
// to watch, audit, repair, count, explain) reads the row; it keeps no
// switch of its own over kinds. What a row cannot say (how to compare an
// extension with the rpm database, how to name a user in a message) stays
// with the code that does it.
type Meaning struct {
	Kind Kind
	// Source is what an entry of the kind is compared with.
	Source Source
	// Events is which changes re-check an entry between full checks
	// (the daemon's index); FullChecksOnly for the others.
	Events Events
	// Audit is the node an audit watch rule may watch to name the writer
	// of its drift (--attribution=audit, drift-monitor audit-rules).
	// Never a directory tree, /proc or /sys: package audit refuses them
	// whatever a row says.
	Audit Audit
	// Repair is how drift-monitor reconcile puts an entry back;
	// NotRepaired says why it does not (Repair == NoRepair).
	Repair      Repair
	NotRepaired string
	// Unit: the entry is part of a systemd unit (its file, a drop-in, a
	// mask, its enablement): a live systemd reloads after a repair.
	Unit bool
	// LeftToNode: a config may leave the node's mode and owner to
	// Ignition (which keeps the node's own or uses its defaults), and the
	// first-boot record keeps what they were (package firstboot).
	LeftToNode bool
	// Field is where a MachineConfig declares it: the field of spec
	// (spec.config is the Ignition config); for what no config declares
	// (KindUndeclared), where it comes from instead.
	Field string
	// ValueFiles are the host paths that hold an entry's declared values,
	// where its drift is reported (drift.Drift.Path); nil: its own Path.
	// A user's existence, uid, gecos, home, shell and primary group are
	// kept in its line's file (/etc/passwd, or /usr/lib/passwd through
	// nss-altfiles), its supplementary groups in /etc/group, its password
	// hash in /etc/shadow; a group's in its line's file (/etc/group or
	// /usr/lib/group) and /etc/gshadow (drift.CompareAccount reports them
	// there; drift's TestValueFilesAreAccountFiles holds these to
	// accountdb's names, and its tests every reported path to them).
	ValueFiles []string
	// Drift lists the kinds of difference (drift.Kind) an entry of the
	// kind reports, notices included: the values of DRIFT_KIND in its
	// records, and the series of drift_monitor_drift_entries{kind} a
	// state that declares it exports.
	Drift []string
	// MessageID is the MESSAGE_ID of its drift records (one per kind, so
	// that journalctl -x explains the kind at hand); Subject and Body are
	// their catalog text (systemd.catalog(7); @FIELD@ is a field of the
	// record), which package journal completes with what Repair says.
	// A kind compared with nothing has none: it only ever carries notices,
	// whose record (journal.MsgNotice) explains them.
	MessageID     string
	Subject, Body string
}

// Source is what an entry is compared with.
type Source int

const (
	// FromNothing: nothing; the entry only carries a notice (a child
	// config never fetched, a file deliberately not checked).
	FromNothing Source = iota
	// FromNode: the node at Path (and, for a hard link, Target), observed
	// inside the root.
	FromNode
	// FromUnitState: systemd's enablement state of Unit.
	FromUnitState
	// FromCmdline: the kernel command lines (the running kernel's, the
	// next boot's).
	FromCmdline
	// FromOS: the booted and the next ostree deployment, the running
	// kernel and the rpm database.
	FromOS
	// FromAccounts: the account files (package accountdb).
	FromAccounts
	// FromImage: the OS image's /etc (package image's baseline: the
	// booted deployment's /usr/etc, bootc's image, the rpm database), for
	// the paths of /etc no config declares.
	FromImage
)

// Events is which changes can affect an entry's outcome between full
// checks, so that the daemon re-checks it when they happen.
type Events int

const (
	// FullChecksOnly: no event; periodic and triggered full checks only
	// (what changes it changes across boots, or it is a notice).
	FullChecksOnly Events = iota
	// NodeEvents: an inotify event at Path or on a directory above it.
	NodeEvents
	// NodeAndTargetEvents: the same at Path or at Target (a hard link
	// shares its target's inode).
	NodeAndTargetEvents
	// AccountEvents: an event at any account file or its lock
	// (accountdb.Files, accountdb.Locks), whichever holds the entry.
	AccountEvents
	// UnitFileEvents: systemd says unit files changed.
	UnitFileEvents
	// TreeEvents: an inotify event anywhere under /etc, seen by the
	// watcher of the daemon's image part (every directory of the tree,
	// those made later included), not by the index of declared paths.
	TreeEvents
)

// Audit is the node an audit watch rule may watch for an entry.
type Audit int

const (
	// AuditNothing: no rule (nothing on disk, or what is there is the
	// kernel's or a whole tree).
	AuditNothing Audit = iota
	// AuditNode: the node at Path.
	AuditNode
	// AuditNodeAndTarget: the nodes at Path and Target.
	AuditNodeAndTarget
)

// Repair is how drift-monitor reconcile puts an entry back.
type Repair int

const (
	// NoRepair: it does not (Meaning.NotRepaired says why).
	NoRepair Repair = iota
	// RepairNode: it writes the node as Ignition writes it.
	RepairNode
	// RepairEnablement: it enables or disables the unit as Ignition's
	// preset does.
	RepairEnablement
	// RepairAccount: it adds, changes or removes the account as Ignition
	// runs shadow-utils.
	RepairAccount
	// RepairNamed: it puts the node back as the OS image has it, only
	// when its path is named (reconcile --image PATH); a plain reconcile
	// never does.
	RepairNamed
)

// The kinds of difference of the rows, in groups that several kinds share.
var (
	nodeDrift    = []string{"missing", "type", "mode", "owner", "group", "unreadable", "unverifiable"}
	metaDrift    = []string{"acl", "xattr", "fileattr", "label", "kept-metadata"}
	fileDrift    = slices.Concat(nodeDrift, []string{"content"}, metaDrift)
	accountDrift = []string{"missing", "present", "password-hash", "unreadable"}
)

// Kinds is the table: one row per Kind. TestKindsHaveRows fails on a
// Kind constant without its row.
var Kinds = []Meaning{
	{
		Kind: KindFile, Source: FromNode, Events: NodeEvents, Audit: AuditNode, Repair: RepairNode, LeftToNode: true,
		// merge-loss: the notice that an OS update's /etc merge will undo
		// a declared node (package image reports it as a file's, whatever
		// the node's type).
		Field: "spec.config.storage.files", Drift: slices.Concat(fileDrift, []string{"merge-loss"}),
		MessageID: "6f4c57ef2ae04abf9d40ae28d84a8b59",
		Subject:   "Configuration drift: file @DRIFT_PATH@ (@DRIFT_KIND@)",
		Body: `The file @DRIFT_PATH@ no longer matches the machine's desired configuration;
DRIFT_KIND says what differs: missing, type (not a regular file, or found
through a symbolic link), content, mode, owner or group, or metadata
Ignition never sets (acl, xattr, fileattr: the immutable or append-only
flag, label: an SELinux label other than the policy's default). The
record's message says how. A diff (DRIFT_DIFF) is shown only for a file
whose declared mode is world-readable and that was found where it was
declared; for the others, sizes and digests keyed with the host's key.`,
	},
	{
		Kind: KindDirectory, Source: FromNode, Events: NodeEvents, Audit: AuditNode, Repair: RepairNode, LeftToNode: true,
		Field: "spec.config.storage.directories", Drift: slices.Concat(nodeDrift, metaDrift),
		MessageID: "ebf1fb8bacad473fad0d3ecde7b4a1c4",
		Subject:   "Configuration drift: directory @DRIFT_PATH@ (@DRIFT_KIND@)",
		Body: `The directory @DRIFT_PATH@ no longer matches the machine's desired
configuration; DRIFT_KIND says what differs: missing, type (not a
directory), mode, owner, group, or metadata Ignition never sets (acl,
xattr, fileattr, label). What the directory holds is not its drift: only
the entries declared in it are checked.`,
	},
	{
		Kind: KindLink, Source: FromNode, Events: NodeEvents, Audit: AuditNode, Repair: RepairNode,
		Field: "spec.config.storage.links", Drift: []string{"missing", "type", "target", "owner", "group", "unreadable", "unverifiable", "xattr", "label", "kept-metadata"},
		MessageID: "91ad9f1bdca646ec92891475cd2f4767",
		Subject:   "Configuration drift: link @DRIFT_PATH@ (@DRIFT_KIND@)",
		Body: `The symbolic link @DRIFT_PATH@ no longer matches the machine's desired
configuration; DRIFT_KIND says what differs: missing, type (not a
symbolic link), target (it points elsewhere than declared: DRIFT_WANT and
DRIFT_GOT), owner or group, or a label or extended attribute Ignition
never sets.`,
	},
	{
		Kind: KindHardLink, Source: FromNode, Events: NodeAndTargetEvents, Audit: AuditNodeAndTarget, Repair: RepairNode,
		Field: "spec.config.storage.links (hard: true)", Drift: []string{"missing", "type", "hardlink", "owner", "group", "unreadable", "unverifiable"},
		MessageID: "fdcc24ab69bc4a9e9505857a14b649ca",
		Subject:   "Configuration drift: hard link @DRIFT_PATH@ (@DRIFT_KIND@)",
		Body: `The hard link @DRIFT_PATH@ no longer shares its inode with its declared
target (DRIFT_KIND hardlink, the target in DRIFT_WANT), or it is missing
or of another type. A rewrite of the target by rename gives the target a
new inode and leaves the link with the old content: both paths then hold
different files.`,
	},
	{
		Kind: KindUnit, Source: FromNode, Events: NodeEvents, Audit: AuditNode, Repair: RepairNode, Unit: true,
		Field: "spec.config.systemd.units (contents)", Drift: slices.Concat(nodeDrift, []string{"content"}, metaDrift),
		MessageID: "72791ae366b2430ca6402449720edb67",
		Subject:   "Configuration drift: unit @DRIFT_UNIT@ (@DRIFT_KIND@)",
		Body: `The unit file of @DRIFT_UNIT@ (@DRIFT_PATH@) no longer matches the
machine's desired configuration; DRIFT_KIND says what differs: missing,
type, content (DRIFT_DIFF has the diff), mode, owner, group or metadata
Ignition never sets. systemd runs the unit as the file on disk says, once
it is reloaded.`,
	},
	{
		Kind: KindDropin, Source: FromNode, Events: NodeEvents, Audit: AuditNode, Repair: RepairNode, Unit: true,
		Field: "spec.config.systemd.units (dropins)", Drift: slices.Concat(nodeDrift, []string{"content"}, metaDrift),
		MessageID: "1e957d1bb74d4e3e9c84ef22c004c8d2",
		Subject:   "Configuration drift: drop-in @DRIFT_PATH@ of @DRIFT_UNIT@ (@DRIFT_KIND@)",
		Body: `The drop-in @DRIFT_PATH@ of @DRIFT_UNIT@ no longer matches the machine's
desired configuration; DRIFT_KIND says what differs: missing, type,
content (DRIFT_DIFF has the diff), mode, owner, group or metadata Ignition
never sets. A drop-in overrides the unit's own settings: systemd applies
the one on disk once it is reloaded.`,
	},
	{
		Kind: KindMask, Source: FromNode, Events: NodeEvents, Audit: AuditNode, Repair: RepairNode, Unit: true,
		Field: "spec.config.systemd.units (mask: true)", Drift: []string{"type", "target", "unmasked", "unreadable", "unverifiable"},
		MessageID: "fbb303a0b5e542f18cecfdb4a33c2725",
		Subject:   "Configuration drift: unit @DRIFT_UNIT@ is not masked (@DRIFT_KIND@)",
		Body: `The unit @DRIFT_UNIT@ is declared masked, and @DRIFT_PATH@ is no longer a
symbolic link to /dev/null: DRIFT_KIND unmasked (the link is gone or
replaced) or target (it points elsewhere). A unit that is not masked can
be started, by hand or as a dependency.`,
	},
	{
		Kind: KindUnmask, Source: FromNode, Events: NodeEvents, Audit: AuditNode, Repair: RepairNode, Unit: true,
		Field: "spec.config.systemd.units (mask: false)", Drift: []string{"type", "masked", "unreadable", "unverifiable"},
		MessageID: "f75534d1d2574d5d80af9dbd7bee8bfa",
		Subject:   "Configuration drift: unit @DRIFT_UNIT@ is masked",
		Body: `The unit @DRIFT_UNIT@ is declared not masked (mask: false), and
@DRIFT_PATH@ is a symbolic link to /dev/null: systemd refuses to start a
masked unit ("systemctl unmask @DRIFT_UNIT@" removes the mask).`,
	},
	{
		Kind: KindEnablement, Source: FromUnitState, Events: UnitFileEvents, Audit: AuditNothing, Repair: RepairEnablement, Unit: true,
		Field: "spec.config.systemd.units (enabled)", Drift: []string{"enablement", "cannot-enable", "unreadable"},
		MessageID: "f3e94924a9ac47b8b5076cb3a8375a7c",
		Subject:   "Configuration drift: unit @DRIFT_UNIT@ is @DRIFT_GOT@",
		Body: `The unit @DRIFT_UNIT@ is declared @DRIFT_WANT@ and systemd says it is
@DRIFT_GOT@ (as "systemctl is-enabled @DRIFT_UNIT@" says): it will, or
will not, be started at the next boot against the desired configuration.
The links systemd places are not watched one by one: a change is seen
when systemd reports that unit files changed, and at every full check.`,
	},
	{
		Kind: KindSSHKeys, Source: FromNode, Events: NodeEvents, Audit: AuditNode, Repair: RepairNode,
		Field: "spec.config.passwd.users (sshAuthorizedKeys)", Drift: fileDrift,
		MessageID: "362c971b075f4d43ab656b6b93f1fb57",
		Subject:   "Configuration drift: SSH keys of @DRIFT_USER@ (@DRIFT_KIND@)",
		Body: `The file that holds the declared SSH keys of @DRIFT_USER@ (@DRIFT_PATH@, in
Ignition's layout) no longer matches the machine's desired configuration:
a key added, removed or changed (content), or its mode, owner, group or
metadata. Who may log in as @DRIFT_USER@ is no longer what was declared.`,
	},
	{
		Kind: KindKernelArg, Source: FromCmdline, Events: FullChecksOnly, Audit: AuditNothing, Repair: NoRepair,
		NotRepaired: "kernel arguments are not written by drift-monitor; rpm-ostree changes them for the next boot",
		Field:       "spec.kernelArguments, spec.config.kernelArguments", Drift: []string{"kernel-argument", "reboot-pending", "unverifiable", "unreadable"},
		MessageID: "e814c218364643df96667b226910eb08",
		Subject:   "Configuration drift: kernel argument @DRIFT_WANT@",
		Body: `A declared kernel argument (DRIFT_WANT; "absent: ARG" for one that must
not be there) is not as declared on the kernel command line: the next
boot's, on an rpm-ostree host (what "rpm-ostree kargs" prints), or the
running kernel's (/proc/cmdline) elsewhere. When only the running kernel
differs, a notice (reboot-pending) says so instead.`,
	},
	{
		Kind: KindConfig, Source: FromNothing, Events: FullChecksOnly, Audit: AuditNothing, Repair: NoRepair,
		NotRepaired: "it is a notice: a child config is never fetched",
		Field:       "spec.config.ignition.config (merge, replace)", Drift: []string{"unverifiable"},
	},
	{
		Kind: KindOSImage, Source: FromOS, Events: FullChecksOnly, Audit: AuditNothing, Repair: NoRepair,
		NotRepaired: "drift-monitor does not change the OS image: the machine-config daemon applies osImageURL, through rpm-ostree and a reboot",
		Field:       "spec.osImageURL", Drift: []string{"os-image", "reboot-pending", "same-image", "not-applicable", "finalization-failed", "unreadable"},
		MessageID: "b943e445325f44888e866b957e6249b8",
		Subject:   "Configuration drift: the booted OS image is not the declared one",
		Body: `The MachineConfig's osImageURL (DRIFT_WANT) is not the image the host
booted (DRIFT_GOT), nor the next boot's deployment. "rpm-ostree status"
shows the deployments; "oc describe node" the machine-config daemon's
view.`,
	},
	{
		Kind: KindKernelType, Source: FromOS, Events: FullChecksOnly, Audit: AuditNothing, Repair: NoRepair,
		NotRepaired: "drift-monitor does not change the kernel: the machine-config daemon applies kernelType, through rpm-ostree and a reboot",
		Field:       "spec.kernelType", Drift: []string{"kernel-type", "reboot-pending", "not-applicable", "unreadable"},
		MessageID: "ecd0881d55744df19342995851f49455",
		Subject:   "Configuration drift: the running kernel is not of type @DRIFT_WANT@",
		Body: `The MachineConfig's kernelType (DRIFT_WANT: default, realtime or
64k-pages) is not the running kernel's (DRIFT_GOT), nor that of the next
boot's deployment.`,
	},
	{
		Kind: KindExtension, Source: FromOS, Events: FullChecksOnly, Audit: AuditNothing, Repair: NoRepair,
		NotRepaired: "drift-monitor does not install extensions: the machine-config daemon applies extensions, through rpm-ostree and a reboot",
		Field:       "spec.extensions", Drift: []string{"extension", "reboot-pending", "not-applicable", "unreadable"},
		MessageID: "cd2f35b6026243c398ce505a66e37ffe",
		Subject:   "Configuration drift: extension @DRIFT_WANT@ is not installed",
		Body: `A MachineConfig extension (DRIFT_WANT) is not installed: not every
package of any set the machine-config operator accepts for it is in the
rpm database (the record's message names the missing ones), nor
requested by the next boot's deployment.`,
	},
	{
		Kind: KindFIPS, Source: FromOS, Events: FullChecksOnly, Audit: AuditNothing, Repair: NoRepair,
		NotRepaired: "drift-monitor does not change FIPS mode: the machine-config daemon applies fips, through the kernel command line and a reboot",
		Field:       "spec.fips", Drift: []string{"fips", "not-applicable", "unreadable"},
		MessageID: "532c2a904d2c4da3990510bb50b43936",
		Subject:   "Configuration drift: FIPS mode is not @DRIFT_WANT@",
		Body: `The MachineConfig's fips (DRIFT_WANT) is not what the running kernel
does (/proc/sys/crypto/fips_enabled, and fips=1 on its command line).`,
	},
	{
		Kind: KindNotChecked, Source: FromNothing, Events: FullChecksOnly, Audit: AuditNothing, Repair: NoRepair,
		NotRepaired: "it is a notice: the machine-config daemon's certificate writer owns the file",
		Field:       "spec.config.storage.files", Drift: []string{"not-checked"},
	},
	{
		Kind: KindUser, Source: FromAccounts, Events: AccountEvents, Audit: AuditNode, Repair: RepairAccount,
		Field:      "spec.config.passwd.users",
		ValueFiles: []string{"/etc/passwd", "/usr/lib/passwd", "/etc/group", "/etc/shadow"},
		Drift:      slices.Concat(accountDrift, []string{"uid", "gecos", "home-dir", "shell", "primary-group", "groups"}),
		MessageID:  "1b9ebe8c1d7f4c5f8536014892348ec1",
		Subject:    "Configuration drift: user @DRIFT_USER@ (@DRIFT_KIND@)",
		Body: `The user @DRIFT_USER@ no longer matches the machine's desired
configuration; DRIFT_KIND names the field that differs (uid, gecos,
home-dir, shell, primary-group, groups, password-hash), or missing, or
present for a user declared shouldExist false; DRIFT_PATH is the account
file that holds it. A password hash is never shown, at most keyed digests.`,
	},
	{
		Kind: KindGroup, Source: FromAccounts, Events: AccountEvents, Audit: AuditNode, Repair: RepairAccount,
		Field: "spec.config.passwd.groups", Drift: slices.Concat(accountDrift, []string{"gid"}),
		ValueFiles: []string{"/etc/group", "/usr/lib/group", "/etc/gshadow"},
		MessageID:  "cb720bed747541348b72978714964ddb",
		Subject:    "Configuration drift: group @DRIFT_GROUP@ (@DRIFT_KIND@)",
		Body: `The group @DRIFT_GROUP@ no longer matches the machine's desired
configuration; DRIFT_KIND names the field that differs (gid,
password-hash), or missing, or present for a group declared shouldExist
false; DRIFT_PATH is the account file that holds it.`,
	},
	{
		// Compared by the image's own rules (package image), in the
		// daemon by its image part; a notice by default, drift with
		// --image=drift, when these records are logged (the notices
		// have records of their own: journal.MsgUndeclared). not-checked:
		// check's notice that the image's /etc has no baseline to compare.
		Kind: KindUndeclared, Source: FromImage, Events: TreeEvents, Audit: AuditNothing, Repair: RepairNamed,
		Field: "no config: the OS image's /etc", Drift: []string{"undeclared", "not-checked"},
		MessageID: "55db311ca3a645d4929363de8ae662c1",
		Subject:   "Configuration drift: undeclared change to the image's /etc: @DRIFT_PATH@",
		Body: `@DRIFT_PATH@ differs from the OS image's /etc (DRIFT_UNDECLARED says
how: the attributes that differ, or added, or removed) and no desired config
declares it; the daemon runs with --image=drift, which makes such a change
drift (by default it is a notice, with records of its own). The image's
/etc is the booted deployment's /usr/etc on ostree hosts (Fedora CoreOS,
RHEL CoreOS, OpenShift nodes, bootc), the image's own /etc on bootc's
composefs backend, and the rpm database on hosts managed with dnf, compared
as "ostree admin config-diff" and "rpm -V" compare. A content is never
shown: only what differs, and sizes. See drift-monitor(8), "THE IMAGE".`,
	},
}

// unknown is the row of a kind that has none: nothing is watched, audited
// or repaired for it, and whatever it reports is only counted.
var unknown = Meaning{NotRepaired: "drift-monitor knows no such kind of entry"}

// rows indexes Kinds: Means is asked for every entry of every check.
var rows = func() map[Kind]*Meaning {
	m := make(map[Kind]*Meaning, len(Kinds))
	for i := range Kinds {
		m[Kinds[i].Kind] = &Kinds[i]
	}
	return m
}()

// Means returns k's row of Kinds; for a kind without one, a row that
// lets nothing happen (and names the kind). The row is shared: read it,
// never change it.
func (k Kind) Means() *Meaning {
	if m, ok := rows[k]; ok {
		return m
	}
	m := unknown
	m.Kind = k
	return &m
}

// String says what an entry is compared with, for the man page.
func (s Source) String() string {
	switch s {
	case FromNode:
		return "the node at its path"
	case FromUnitState:
		return "systemd's enablement of its unit"
	case FromCmdline:
		return "the kernel command line"
	case FromOS:
		return "the booted ostree deployment, the running kernel and the rpm database"
	case FromAccounts:
		return "the account files"
	case FromImage:
		return "the OS image's /etc (the booted deployment's /usr/etc, or the rpm database)"
	}
	return "nothing (a notice only)"
}

// String says what re-checks an entry, for the man page.
func (e Events) String() string {
	switch e {
	case NodeEvents:
		return "an event at its path"
	case NodeAndTargetEvents:
		return "an event at its path or its target"
	case AccountEvents:
		return "an event at an account file or its lock"
	case UnitFileEvents:
		return "systemd's signal that unit files changed"
	case TreeEvents:
		return "an event anywhere under /etc"
	}
	return "full checks only"
}

// String names the node an audit rule may watch, for the man page.
func (a Audit) String() string {
	switch a {
	case AuditNode:
		return "its path"
	case AuditNodeAndTarget:
		return "its path and its target"
	}
	return "none"
}

// String says how reconcile puts an entry back, for the man page and the
// catalog (NoRepair: see Meaning.NotRepaired).
func (r Repair) String() string {
	switch r {
	case RepairNode:
		return "writes it as Ignition writes it"
	case RepairEnablement:
		return "enables or disables it as Ignition's preset does"
	case RepairAccount:
		return "adds, changes or removes it as Ignition runs shadow-utils"
	case RepairNamed:
		return "--image PATH puts it back as the OS image has it, only when its path is named"
	}
	return "does not repair it"
}
