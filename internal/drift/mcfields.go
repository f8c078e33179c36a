package drift

import (
	"fmt"
	"slices"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/osstate"
)

// The kinds of a MachineConfig's fields beyond Ignition (model.KindOSImage
// and the rest): drift, then notices.
const (
	OSImage    Kind = "os-image"
	KernelType Kind = "kernel-type"
	Extension  Kind = "extension"
	FIPS       Kind = "fips"
	// NotChecked is a notice: a declared file deliberately left unchecked
	// (model.KindNotChecked), with the reason.
	NotChecked Kind = "not-checked"
	// NotApplicable is a notice: the host is not an ostree host, so the
	// MachineConfig field does not apply (the MCD's "Not booted into a
	// CoreOS variant").
	NotApplicable Kind = "not-applicable"
	// SameImage is a notice: the booted image is the declared one under
	// another name (the same manifest digest).
	SameImage Kind = "same-image"
	// FinalizationFailed is a notice: the previous boot's ostree
	// finalization failed, so the host booted its old deployment.
	FinalizationFailed Kind = "finalization-failed"
)

// MachineConfigKinds lists the kinds above, for whoever counts kinds.
var MachineConfigKinds = []Kind{OSImage, KernelType, Extension, FIPS, NotChecked, NotApplicable, SameImage, FinalizationFailed}

func mcDrift(e *model.Entry, k Kind, msg, want, got string) Drift {
	return Drift{Kind: k, Entry: e.Kind, Path: e.Path, Message: msg, Want: want, Got: got, EntryID: e.ID()}
}

// MachineConfigResult is a MachineConfig field's check: drift, or notices
// (reboot pending, not applicable, not checked, another name).
type MachineConfigResult struct {
	Drift   []Drift
	Notices []Drift
}

// CompareMachineConfig checks a MachineConfig field entry against what was
// read of the host; installed are the packages found in the rpm database
// (nil with rpmErr when they could not be looked up).
func CompareMachineConfig(e *model.Entry, s *osstate.State, installed map[string]bool, rpmErr error) MachineConfigResult {
	var r MachineConfigResult
	notice := func(k Kind, format string, args ...any) MachineConfigResult {
		r.Notices = append(r.Notices, mcDrift(e, k, fmt.Sprintf(format, args...), "", ""))
		return r
	}
	if !s.Ostree {
		return notice(NotApplicable, "%s does not apply: the host is not booted through ostree (no %s)", Noun(e), osstate.BootedFile)
	}
	switch e.Kind {
	case model.KindOSImage:
		return compareOSImage(e, s)
	case model.KindKernelType:
		if s.KernelErr != nil {
			return notice(Unverifiable, "%s is not checked: %v", Noun(e), s.KernelErr)
		}
		running := s.RunningKernelType()
		if running == e.Arg {
			return r
		}
		if s.Next != nil && s.Next.KernelType() == e.Arg {
			return notice(RebootPending, "reboot pending: the running kernel is %s, not %s; the next boot's deployment (%s) is configured for it",
				running, e.Arg, s.NextSource)
		}
		r.Drift = append(r.Drift, mcDrift(e, KernelType, fmt.Sprintf("%s: the running kernel is %s%s", Noun(e), running, nextUnknown(s)), e.Arg, running))
		return r
	case model.KindExtension:
		if rpmErr != nil {
			return notice(Unverifiable, "%s is not checked: %v", Noun(e), rpmErr)
		}
		sets := model.ExtensionPackages(e.Arg)
		var missing []string
		for i, set := range sets {
			var m []string
			for _, p := range set {
				if !installed[p] {
					m = append(m, p)
				}
			}
			if len(m) == 0 {
				return r
			}
			if i == 0 {
				missing = m // the current set's, for the message
			}
		}
		if s.Next != nil && slices.ContainsFunc(sets, func(set []string) bool {
			return !slices.ContainsFunc(set, func(p string) bool { return !slices.Contains(s.Next.Requested, p) })
		}) {
			return notice(RebootPending, "reboot pending: %s is not installed (%s missing); the next boot's deployment (%s) requests it",
				Noun(e), strings.Join(missing, ", "), s.NextSource)
		}
		r.Drift = append(r.Drift, mcDrift(e, Extension, fmt.Sprintf("%s is not installed: %s not in the rpm database%s",
			Noun(e), strings.Join(missing, ", "), nextUnknown(s)), "installed", "missing "+strings.Join(missing, ", ")))
		return r
	case model.KindFIPS:
		return compareFIPS(e, s)
	}
	return r
}

// compareOSImage compares the booted deployment's image with osImageURL as
// the machine-config daemon's checkOS does (pkg/daemon/daemon.go, 7ff337a4):
// string equality, no resolution of tags or mirrors. Where they differ and
// osImageURL is pinned by digest, the booted commit's manifest digest
// equal to it is the same image under another name: clean, with a notice.
func compareOSImage(e *model.Entry, s *osstate.State) MachineConfigResult {
	var r MachineConfigResult
	if s.BootedErr != nil {
		r.Notices = append(r.Notices, mcDrift(e, Unverifiable, fmt.Sprintf("%s is not checked: cannot identify the booted deployment: %v", Noun(e), s.BootedErr), "", ""))
		return r
	}
	b := s.Booted
	if b.ImageErr != nil {
		r.Drift = append(r.Drift, mcDrift(e, OSImage, fmt.Sprintf("%s: the booted deployment's origin: %v", Noun(e), b.ImageErr), e.Arg, ""))
		return r
	}
	if b.Image == e.Arg {
		return r
	}
	if same(e.Arg, b) {
		r.Notices = append(r.Notices, mcDrift(e, SameImage, fmt.Sprintf("%s is booted as %s, the same image (manifest %s)",
			Noun(e), escape.Name(b.Image), b.ManifestDigest), e.Arg, b.Image))
		return r
	}
	if n := s.Next; n != nil && n.ImageErr == nil && (n.Image == e.Arg || same(e.Arg, n)) {
		r.Notices = append(r.Notices, mcDrift(e, RebootPending, fmt.Sprintf("reboot pending: %s is not booted; the next boot's deployment (%s) has it",
			Noun(e), s.NextSource), e.Arg, b.Image))
		return r
	}
	got := b.Image
	msg := fmt.Sprintf("%s: the booted image is %s", Noun(e), escape.Name(b.Image))
	if b.Image == "" {
		got = b.Refspec
		msg = fmt.Sprintf("%s: the booted deployment is of the ostree branch %q, not of an image", Noun(e), b.Refspec)
	}
	r.Drift = append(r.Drift, mcDrift(e, OSImage, msg+nextUnknown(s), e.Arg, got))
	return r
}

// same: want is pinned by digest (…@sha256:HEX), d is a deployment of an
// image (not of an ostree branch), and its commit has that manifest digest.
func same(want string, d *osstate.Deployment) bool {
	_, digest, ok := strings.Cut(want, "@")
	return ok && d.Image != "" && strings.HasPrefix(digest, "sha256:") && d.ManifestDigest == digest
}

// compareFIPS: fips true wants /proc/sys/crypto/fips_enabled 1 and fips=1
// on the command line (RHCOS's rhcos-fips puts it there at first boot);
// false wants fips_enabled 0 or absent, as the MCD's processFips reads it
// (pkg/daemon/update.go, 7ff337a4).
func compareFIPS(e *model.Entry, s *osstate.State) MachineConfigResult {
	var r MachineConfigResult
	if s.FIPSErr != nil || s.CmdlineErr != nil {
		r.Notices = append(r.Notices, mcDrift(e, Unverifiable, fmt.Sprintf("%s is not checked: %v", Noun(e), firstErr(s.FIPSErr, s.CmdlineErr)), "", ""))
		return r
	}
	enabled := s.FIPSEnabled == "1"
	got := "fips_enabled=" + s.FIPSEnabled
	if s.FIPSMissing {
		got = "no " + osstate.FIPSFile
	}
	switch {
	case e.ArgPresent && s.FIPSMissing:
		r.Drift = append(r.Drift, mcDrift(e, FIPS, fmt.Sprintf("%s: the kernel has no FIPS mode (no %s)", Noun(e), osstate.FIPSFile), "fips_enabled=1", got))
	case e.ArgPresent && !enabled:
		r.Drift = append(r.Drift, mcDrift(e, FIPS, fmt.Sprintf("%s: the kernel does not run in FIPS mode (%s)", Noun(e), got), "fips_enabled=1", got))
	case e.ArgPresent && !slices.Contains(s.Cmdline, "fips=1"):
		r.Drift = append(r.Drift, mcDrift(e, FIPS, fmt.Sprintf("%s: fips=1 is not on the kernel command line", Noun(e)), "fips=1", "no fips=1"))
	case !e.ArgPresent && enabled:
		r.Drift = append(r.Drift, mcDrift(e, FIPS, fmt.Sprintf("%s: the kernel runs in FIPS mode", Noun(e)), "fips_enabled=0", got))
	}
	return r
}

// nextUnknown says, for a drift, that the next boot's deployment could not
// be read: the drift may be a pending reboot.
func nextUnknown(s *osstate.State) string {
	if s.NextErr == nil {
		return ""
	}
	return fmt.Sprintf(" (whether the next boot has it is unknown: %v)", s.NextErr)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// FinalizationNotice is the notice of a failed ostree finalization in the
// previous boot (osstate.FinalizationFailure): the host did not boot the
// deployment staged for it.
func FinalizationNotice(text string) Drift {
	return Drift{Kind: FinalizationFailed, Entry: model.KindOSImage, Path: "/usr/lib/systemd/system/ostree-boot-complete.service",
		Unit: "ostree-boot-complete.service", EntryID: "os-image:finalization",
		Message: "the previous boot's ostree finalization failed, so the deployment staged for this boot was not booted: " + escape.Text(text)}
}
