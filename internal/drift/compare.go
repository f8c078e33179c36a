package drift

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/drift-monitor/drift-monitor/internal/enablement"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// Compare lists how the observation differs from the entry; nil when it does
// not. Type is decided first: once the type differs, nothing else is compared.
// Digests of content that must not be shown are keyed with key (see Key).
func Compare(e *model.Entry, ob *ondisk.Observation, key model.Key) []Drift {
	d := newDrifts(e)
	if ob.Err != nil {
		d.add(Unreadable, fmt.Sprintf("cannot examine %s: %v", Noun(e), ob.Err), "", "")
		return d.list
	}
	if dt := ob.Detour; dt != nil && e.Type != model.TypeNone {
		compareDetour(e, dt, d)
		return d.list
	}
	switch e.Type {
	case model.TypeNotMasked:
		if ob.Type == ondisk.Symlink && ob.Target == "/dev/null" {
			d.add(Masked, fmt.Sprintf("%s is masked, want unmasked", Noun(e)), "unmasked", "masked")
		}
		return d.list
	case model.TypeNone:
		return nil
	}
	if e.Kind == model.KindMask {
		compareMask(e, ob, d)
		return d.list
	}
	want := wantType(e.Type)
	if e.Type == model.TypeHardLink && ob.TargetErr == nil && ob.TargetType != ondisk.Absent && ob.TargetType != ondisk.Directory {
		// link(2) does not follow a symlink: a hard link to one is a symlink
		// sharing its inode (Ignition's WriteLink calls os.Link; linkEntry.create
		// compares an existing link with its target by os.Lstat and SameFile,
		// internal/exec/stages/files/filesystemEntries.go). The inode decides,
		// so the type to expect is the target's own.
		want = ob.TargetType
	}
	if ob.Type == ondisk.Absent {
		if e.MayBeAbsent {
			return nil
		}
		d.add(Missing, fmt.Sprintf("%s does not exist", Noun(e)), want.String(), "nothing")
		return d.list
	}
	if ob.Type != want {
		d.add(Type, fmt.Sprintf("type mismatch for %s: want %s, got %s", Noun(e), want, ob.Type), want.String(), ob.Type.String())
		return d.list
	}
	compareLink(e, ob, d)
	compareAttributes(e, ob, d)
	if e.Type == model.TypeRegular && e.Content != nil {
		compareContent(e, ob, d, key)
	}
	compareMeta(e, ob, d, key)
	return d.list
}

// compareDetour reports a path that is not where it was declared: what is
// there is not the declared file's business, and was not looked at.
func compareDetour(e *model.Entry, dt *ondisk.Detour, d *drifts) {
	if dt.Want != "" {
		want, got := fmt.Sprintf("symbolic link to %q", dt.Want), fmt.Sprintf("symbolic link to %q", dt.Target)
		d.add(Type, fmt.Sprintf("type mismatch for %s: %q: want %s, got %s", Noun(e), dt.Path, want, got), want, got)
	} else {
		d.add(Type, fmt.Sprintf("type mismatch for %s: %q: want directory, got symbolic link to %q", Noun(e), dt.Path, dt.Target),
			ondisk.Directory.String(), ondisk.Symlink.String())
	}
}

// compareMask reports a mask that is not in place. A mask that is gone or
// replaced lets the unit start: "unmasked". A mask symlink retargeted
// elsewhere is reported like any link: "target".
func compareMask(e *model.Entry, ob *ondisk.Observation, d *drifts) {
	switch {
	case ob.Type == ondisk.Symlink && ob.Target != e.Target:
		d.add(Target, fmt.Sprintf("%s is not masked: %q points to %q, want %q", Noun(e), e.Path, ob.Target, e.Target), e.Target, ob.Target)
	case ob.Type != ondisk.Symlink:
		got := ob.Type.String()
		d.add(Unmasked, fmt.Sprintf("%s is not masked: want %q linked to /dev/null, got %s", Noun(e), e.Path, article(got)), "masked", got)
	}
}

// compareLink reports a symbolic link's target, and a hard link that does not
// share its target's inode.
func compareLink(e *model.Entry, ob *ondisk.Observation, d *drifts) {
	switch e.Type {
	case model.TypeSymlink:
		if ob.Target != e.Target {
			d.add(Target, fmt.Sprintf("target mismatch for %s: want %q, got %q", Noun(e), e.Target, ob.Target), e.Target, ob.Target)
		}
	case model.TypeHardLink:
		switch {
		case ob.TargetErr != nil:
			d.add(Unreadable, fmt.Sprintf("cannot examine the target %q of %s: %v", e.Target, Noun(e), ob.TargetErr), "", "")
		case ob.TargetType == ondisk.Absent:
			d.add(HardLink, fmt.Sprintf("%s does not share an inode with %q: the target does not exist", Noun(e), e.Target), e.Target, "")
		case ob.TargetDev != ob.Dev || ob.TargetIno != ob.Ino:
			d.add(HardLink, fmt.Sprintf("%s does not share an inode with %q", Noun(e), e.Target), e.Target, "another inode")
		}
	}
}

// compareAttributes reports mode, owner and group.
func compareAttributes(e *model.Entry, ob *ondisk.Observation, d *drifts) {
	if e.Mode != nil && ob.Type != ondisk.Symlink && ob.Mode&^e.ModeOptional != *e.Mode {
		w, g := model.FormatMode(*e.Mode), model.FormatMode(ob.Mode)
		also := ""
		if e.ModeOptional != 0 {
			also = fmt.Sprintf(" (or with bits %s, declared but not applied by the spec)", model.FormatMode(e.ModeOptional))
		}
		d.add(Mode, fmt.Sprintf("mode mismatch for %s: want %s%s, got %s%s", Noun(e), w, also, g, recorded(e, e.FirstBoot != nil && e.FirstBoot.Mode)), w, g)
	}
	if e.OwnerProblem != "" {
		d.add(Owner, fmt.Sprintf("owner mismatch for %s: %s", Noun(e), e.OwnerProblem), "", fmt.Sprintf("%d:%d", ob.UID, ob.GID))
	}
	if e.GroupProblem != "" {
		d.add(Group, fmt.Sprintf("group mismatch for %s: %s", Noun(e), e.GroupProblem), "", fmt.Sprint(ob.GID))
	}
	if e.UID != nil && ob.UID != *e.UID {
		d.add(Owner, fmt.Sprintf("owner mismatch for %s: want uid %d, got uid %d%s", Noun(e), *e.UID, ob.UID, recorded(e, e.FirstBoot != nil && e.FirstBoot.Owner)), fmt.Sprint(*e.UID), fmt.Sprint(ob.UID))
	}
	if e.GID != nil && ob.GID != *e.GID {
		d.add(Group, fmt.Sprintf("group mismatch for %s: want gid %d, got gid %d%s", Noun(e), *e.GID, ob.GID, recorded(e, e.FirstBoot != nil && e.FirstBoot.Group)), fmt.Sprint(*e.GID), fmt.Sprint(ob.GID))
	}
}

// recorded says where a wanted value the config leaves to the node comes
// from: the first-boot record (package firstboot), when it does.
func recorded(e *model.Entry, fromRecord bool) string {
	if !fromRecord {
		return ""
	}
	return fmt.Sprintf(" (not declared: as Ignition left it at the first boot, recorded in %s)", escape.Name(e.FirstBoot.Record))
}

func article(s string) string {
	if s == "nothing" {
		return s
	}
	if strings.ContainsRune("aeiou", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}

func wantType(t model.Type) ondisk.FileType {
	switch t {
	case model.TypeDirectory:
		return ondisk.Directory
	case model.TypeSymlink:
		return ondisk.Symlink
	}
	return ondisk.Regular // regular files and hard links (to regular files)
}

type drifts struct {
	e    *model.Entry
	list []Drift
}

func newDrifts(e *model.Entry) *drifts { return &drifts{e: e} }

func (d *drifts) add(k Kind, msg, want, got string) *Drift {
	d.list = append(d.list, Drift{
		Kind: k, Entry: d.e.Kind, Path: d.e.Path, Unit: d.e.Unit, User: d.e.User,
		Message: msg, Want: want, Got: got, EntryID: d.e.ID(),
	})
	return &d.list[len(d.list)-1]
}

func compareContent(e *model.Entry, ob *ondisk.Observation, d *drifts, key model.Key) {
	c := &ob.Content
	switch c.State {
	case ondisk.ReadFailed:
		d.add(Unreadable, fmt.Sprintf("cannot read %s: %v", Noun(e), c.Err), "", "")
		return
	case ondisk.Differs:
	default:
		return
	}
	w := e.Content
	exactSize, exact := w.ExactSize()
	if exact && c.GotSize == exactSize {
		// The file changed between the streamed comparison and the re-read
		// that describes it, and now matches: a write completed meanwhile.
		if sum := w.Digest(); c.GotDigest == hex.EncodeToString(sum[:]) {
			return
		}
	}
	// The bytes on disk may be shown only if both the config and the file
	// let anyone read them: a file someone made 0600, or moved where others
	// cannot go, may now hold a secret, whatever the config says it should
	// hold. What may be shown may have plain digests too; the rest only
	// keyed ones.
	shown := !e.Secret() && ob.Public
	g := digester{key: key, plain: shown}
	got := g.describe(c.GotSize, unhex(c.GotDigest))
	var want string
	switch {
	case exact:
		sum := w.Digest()
		want = g.describe(exactSize, sum[:])
	case w.Hash != nil:
		// The config's own digest of a content that may be secret: no more
		// shown than the content (the config may be root's alone).
		want = w.Hash.String()
		if !shown {
			want = fmt.Sprintf("the %s verification hash in the config", w.Hash.Algorithm)
		}
		if len(w.Suffix) > 0 {
			want += fmt.Sprintf(" followed by %d appended bytes", len(w.Suffix))
		}
	case w.Base != nil && w.Base.Unknown == "":
		// The record's digest is keyed already, with the host's key: it
		// names the base as a keyed digest of the report would.
		s := sha256.Sum256(w.Suffix)
		want = fmt.Sprintf("the %d-byte base recorded at the first boot (%s:%s) followed by %s",
			w.Base.Size, model.KeyedDigest, hex.EncodeToString(w.Base.Keyed[:]), g.describe(int64(len(w.Suffix)), s[:]))
	default:
		s := sha256.Sum256(w.Suffix)
		want = "ending with " + g.describe(int64(len(w.Suffix)), s[:])
	}
	dr := d.add(Content, fmt.Sprintf("content mismatch for %s", Noun(e)), want, got)
	// A Stored content is described by its size and digest alone: its
	// bytes are not in memory, and Compare reads nothing.
	if Diffable(e, ob) && w.Exact != nil {
		dr.Diff = Unified(e.Path, w.Exact, c.Got)
	}
}

// Diffable reports whether the content drift that ob shows of e would carry
// a diff, given the declared bytes: the file may be shown (see the package
// doc), both sides are exact bytes, and neither is larger than a file kept
// for a diff. A caller that holds e's content as Stored reads the bytes back
// only then, and compares an entry that holds them as Exact (check does).
func Diffable(e *model.Entry, ob *ondisk.Observation) bool {
	if e.Content == nil || ob.Content.State != ondisk.Differs || ob.Content.Got == nil {
		return false
	}
	size, exact := e.Content.ExactSize()
	return exact && size <= ondisk.DiffLimit && !e.Secret() && ob.Public
}

// Unified is a deterministic unified diff (-want +got) of two texts, with
// control characters escaped so that the file cannot drive a terminal. It
// returns "" when either side is not text.
func Unified(name string, want, got []byte) string {
	if !isText(want) || !isText(got) {
		return ""
	}
	diff := udiff.Unified(escape.Name(name)+" (want)", escape.Name(name)+" (got)", string(want), string(got))
	lines := strings.SplitAfter(diff, "\n")
	var b strings.Builder
	for _, l := range lines {
		body := strings.TrimSuffix(l, "\n")
		b.WriteString(escapeDiffLine(body))
		if len(body) < len(l) {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// escapeDiffLine keeps tabs (common in configs) and escapes other control
// characters.
func escapeDiffLine(s string) string {
	parts := strings.Split(s, "\t")
	for i, p := range parts {
		parts[i] = escape.Text(p)
	}
	return strings.Join(parts, "\t")
}

func isText(b []byte) bool {
	return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}

// CannotEnableNotice is the notice for a unit declared enabled that is in
// state ("disabled", "linked", "enabled-runtime") because nothing can
// enable it (why, from enablement.Tree.WantEnabled and the first-boot
// record, starts "cannot be enabled").
func CannotEnableNotice(e *model.Entry, state, why string) Drift {
	return Drift{Kind: CannotEnable, Entry: e.Kind, Path: e.Path, Unit: e.Unit, EntryID: e.ID(),
		Message: fmt.Sprintf("%s %s", Noun(e), why), Want: "enabled", Got: state}
}

// EnablementLost is the drift of a unit declared enabled that is in state,
// and was enabled before: because says how it was and what holds it now.
func EnablementLost(e *model.Entry, state, because string) []Drift {
	d := newDrifts(e)
	d.add(Enablement, fmt.Sprintf("%s is %s, want enabled: %s", Noun(e), state, because), "enabled", state)
	return d.list
}

// CompareEnablement compares a unit's declared enablement with its unit file
// state as systemd names it (`systemctl is-enabled`); err is a failure to ask.
func CompareEnablement(e *model.Entry, state string, err error) []Drift {
	if e.Enabled == nil {
		return nil
	}
	d := newDrifts(e)
	if err != nil {
		d.add(Unreadable, fmt.Sprintf("cannot determine whether %s is enabled: %v", Noun(e), err), "", "")
		return d.list
	}
	// What satisfies `enabled: true` by the state alone is
	// enablement.SatisfiesEnabled's to say (with why); where enabling
	// could do no more, the caller asks enablement.Tree.WantEnabled.
	want, ok := "enabled", enablement.SatisfiesEnabled(state)
	if !*e.Enabled {
		want, ok = "disabled", state != enablement.StateEnabled && state != enablement.StateEnabledRuntime
	}
	if !ok {
		d.add(Enablement, fmt.Sprintf("%s is %s, want %s", Noun(e), state, want), want, state)
	}
	return d.list
}

// CompareKernelArg checks a declared kernel argument against the running
// kernel's command line, split into arguments.
func CompareKernelArg(e *model.Entry, args []string, err error) []Drift {
	d := newDrifts(e)
	if err != nil {
		d.add(Unreadable, fmt.Sprintf("cannot read the kernel command line: %v", err), "", "")
		return d.list
	}
	present := false
	for _, a := range args {
		if a == e.Arg {
			present = true
			break
		}
	}
	switch {
	case e.ArgPresent && !present:
		d.add(KernelArg, fmt.Sprintf("%s is missing from /proc/cmdline", Noun(e)), e.Arg, "")
	case !e.ArgPresent && present:
		d.add(KernelArg, fmt.Sprintf("%s is present in /proc/cmdline, want it absent", Noun(e)), "absent: "+e.Arg, e.Arg)
	}
	return d.list
}

// CompareKernelArgNextBoot checks a declared kernel argument against the
// next boot's command line, args, read from source (a boot loader entry).
func CompareKernelArgNextBoot(e *model.Entry, args []string, source string) []Drift {
	d := newDrifts(e)
	present := slices.Contains(args, e.Arg)
	switch {
	case e.ArgPresent && !present:
		d.add(KernelArg, fmt.Sprintf("%s is missing from the next boot's command line (%s)", Noun(e), source), e.Arg, "")
	case !e.ArgPresent && present:
		d.add(KernelArg, fmt.Sprintf("%s is present in the next boot's command line (%s), want it absent", Noun(e), source), "absent: "+e.Arg, e.Arg)
	}
	return d.list
}

// PendingReboot is the notice for a declared kernel argument that the next
// boot's command line (next, from source) satisfies and the running
// kernel's (running) does not: a reboot will apply it. nil otherwise.
func PendingReboot(e *model.Entry, running, next []string, source string) *Drift {
	inNext, inRunning := slices.Contains(next, e.Arg), slices.Contains(running, e.Arg)
	if inNext != e.ArgPresent || inRunning == e.ArgPresent {
		return nil
	}
	how := "is not in /proc/cmdline yet"
	if !e.ArgPresent {
		how = "is still in /proc/cmdline"
	}
	return &Drift{Kind: RebootPending, Entry: e.Kind, Path: e.Path, EntryID: e.ID(),
		Message: fmt.Sprintf("reboot pending: %s %s; the next boot's command line (%s) has it as declared", Noun(e), how, source)}
}

// Notice returns the notice an entry carries whatever the disk holds: a
// content that cannot be verified offline.
func Notice(e *model.Entry) *Drift {
	if e.Content == nil || e.Content.Unverifiable == "" {
		return nil
	}
	msg := fmt.Sprintf("content of %s is not verified: %s", Noun(e), e.Content.Unverifiable)
	kind := Unverifiable
	switch e.Kind {
	case model.KindConfig:
		msg = fmt.Sprintf("%s is not checked: %s", Noun(e), e.Content.Unverifiable)
	case model.KindNotChecked:
		msg = fmt.Sprintf("%s is not checked: %s", Noun(e), e.Content.Unverifiable)
		kind = NotChecked
	}
	return &Drift{Kind: kind, Entry: e.Kind, Path: e.Path, Unit: e.Unit, User: e.User,
		Message: msg, EntryID: e.ID()}
}
