package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/exclude"
	"github.com/drift-monitor/drift-monitor/internal/image"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/reconcile"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
)

// reconcileImage is `drift-monitor reconcile --image PATH...`: each named
// path of /etc that is an undeclared change goes back to the OS image's
// default (image.Baseline.Restore): the image's nodes written as package
// reconcile writes declared ones, or a node the image does not have
// removed. Only named paths, never by default; never a path a config
// declares (plain reconcile puts those back as declared), nor one the OS
// writes itself, a confext provides, the first boot left, or an exclusion
// covers. No inhibitor is taken: the daemon sees each restored path become
// the image's again, and says so (MsgUndeclaredGone).
func reconcileImage(ctx context.Context, o *reconcileOptions, std Stdio) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(std.Err, "drift-monitor reconcile: %s\n", escape.Text(fmt.Sprintf(format, a...)))
		return ExitFailed
	}
	if len(o.names) == 0 {
		return fail("--image restores only the paths it is given: name them (check --image lists the differences)")
	}
	if os.Geteuid() != 0 {
		return fail("only root can reconcile: it writes files of /etc with their owners")
	}
	r, err := openRoot(o.root)
	if err != nil {
		return fail("%v", err)
	}
	defer r.Close()
	state, err := loadDesired(nil, r, o.configs, "reconcile", std.Err)
	if errors.Is(err, discover.ErrNoConfig) {
		state, err = &model.State{}, nil // nothing declared: every difference is undeclared
	}
	if err != nil {
		return fail("%v", err)
	}
	b, err := image.Find(ctx, r)
	if err != nil {
		return fail("%v", err)
	}
	defer b.Close()
	if !b.Available() {
		return fail("the OS image's /etc cannot be compared: %s", b.Unavailable)
	}
	rep, err := restoreNamed(ctx, r, b, state, o)
	if err != nil {
		return fail("%v", err)
	}
	return rep.finish(o, std, fail)
}

// restoreNamed plans and (unless it is a dry run) does the restoration of
// each named path, then compares them again. Every named path is judged
// before anything is written, so that a run and its dry run judge alike,
// in this order: under /etc; not excluded (the exclusions come first, as
// everywhere: an excluded path is never written, whatever it is); a
// difference from the image, and not within a larger one (unless that one
// is named too: it is restored with it); undeclared. Every other is
// refused with why.
func restoreNamed(ctx context.Context, r *ondisk.Root, b *image.Baseline, state *model.State, o *reconcileOptions) (*reconcileReport, error) {
	rules, err := o.exclude.Load(r)
	if err != nil {
		return nil, err
	}
	excluded := imageExclusions(rules)
	key, _ := hostKey()
	cl, _ := image.NewClassifierFor(r, b, state.Entries, key, excluded)
	rep := &reconcileReport{Root: r.Dir(), DryRun: o.dryRun}
	named := map[string]bool{}
	for _, name := range o.names {
		named[path.Clean(name)] = true
	}
	type planned struct {
		act reconcile.Action
		c   image.Change
	}
	var plan []planned
	for _, name := range o.names {
		p := path.Clean(name)
		act := reconcile.Action{Entry: model.KindUndeclared, Path: p, Drift: []drift.Kind{drift.Undeclared}}
		refuse := func(why, command string) {
			act.Problem, act.Command = why, command
			rep.Refused = append(rep.Refused, act)
		}
		if !strings.HasPrefix(p, image.EtcDir+"/") {
			refuse("not a path under /etc: the image declares /etc only", "")
			continue
		}
		if excluded != nil && excluded(&drift.Drift{Kind: drift.Undeclared, Entry: model.KindUndeclared, Path: p}) {
			refuse("excluded (the exclusions leave it alone, as the daemon does): left alone", "")
			continue
		}
		scope, cs, err := b.DiffAt(ctx, r, p)
		if err != nil {
			return nil, err
		}
		var c *image.Change
		for i := range cs {
			if cs[i].Path == p {
				c = &cs[i]
			}
		}
		switch {
		case scope != p && len(cs) > 0 && named[scope]:
			// Restored with the named change that covers it, among whose
			// steps it is.
			continue
		case scope != p && len(cs) > 0:
			refuse(fmt.Sprintf("%s is the change that covers it: name that", scope), "")
			continue
		case c == nil:
			refuse("not a difference from the image: it is as the image has it, nothing to restore", "")
			continue
		}
		d := cl.Classify(ctx, []image.Change{*c})[0]
		if d.Class != image.ClassUndeclared {
			why := map[image.Class]string{
				image.ClassDeclared:  "a config declares it: plain reconcile puts it back as declared",
				image.ClassRuntime:   "the OS writes it while it runs (" + d.Why + ")",
				image.ClassExtension: "the confext " + d.Why + " provides it",
				image.ClassFirstBoot: "it is as the first boot left it (" + image.RecordPath + ")",
			}[d.Class]
			if d.Why == image.WhyAccountLines {
				why = image.WhyAccountLines + ": plain reconcile puts the accounts back as declared"
			}
			refuse("not an undeclared change: "+why, "")
			continue
		}
		plan = append(plan, planned{act, *c})
	}
	labels, lerr := selinux.ForRoot(r.ReadFile)
	for i := range plan {
		act, c, p := plan[i].act, &plan[i].c, plan[i].act.Path
		refuse := func(why, command string) {
			act.Problem, act.Command = why, command
			rep.Refused = append(rep.Refused, act)
		}
		rs := b.Restore(ctx, r, c)
		if rs.Refused != "" {
			refuse(rs.Refused, rs.Command)
			continue
		}
		if rs.Remove {
			act.Steps = []reconcile.Step{{Op: reconcile.OpRemove, Path: p, Says: "remove " + escape.Name(p) + ": the image has none", Resolves: []drift.Kind{drift.Undeclared}}}
			act.Done = []string{act.Steps[0].Says}
			if !o.dryRun {
				if err := image.RemoveAdded(r, p); err != nil {
					refuse("removing it: "+err.Error(), "")
					continue
				}
			}
			rep.Repaired = append(rep.Repaired, act)
			continue
		}
		done := writeImageNodes(ctx, r, rs.Entries, o.dryRun, labels, lerr == nil)
		rep.Repaired = append(rep.Repaired, done.Repaired...)
		rep.Refused = append(rep.Refused, done.Refused...)
	}
	if o.dryRun {
		return rep, nil
	}
	for _, name := range o.names {
		p := path.Clean(name)
		if !strings.HasPrefix(p, image.EtcDir+"/") {
			continue
		}
		_, cs, err := b.DiffAt(ctx, r, p)
		if err != nil {
			return nil, fmt.Errorf("comparing again after the restoration: %w", err)
		}
		for _, d := range cl.Classify(ctx, cs) {
			if d.Path == p && d.Class == image.ClassUndeclared && !d.Excluded {
				rep.Remaining = append(rep.Remaining, d.Drift(b.Source))
			}
		}
	}
	return rep, nil
}

// imageRefusals are, when the image's mode is drift (the settings file's,
// as the daemon and check read it), the undeclared differences from the
// image: drift that plain reconcile never writes — an undeclared change is
// put back only when named (reconcile --image PATH) —, so listed as not
// repaired: reconcile, check and status then agree that the host is not
// clean. Nothing in the other modes, or where the image's /etc cannot be
// compared (check's notice says why).
func imageRefusals(ctx context.Context, r *ondisk.Root, state *model.State, rules *exclude.Rules) ([]reconcile.Action, error) {
	mode, err := imageModeOf(r, "")
	if err != nil || mode != image.ModeDrift {
		return nil, err
	}
	b, cs, err := image.FindDiff(ctx, r)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if !b.Available() {
		return nil, nil
	}
	key, _ := hostKey()
	cl, _ := image.NewClassifierFor(r, b, state.Entries, key, imageExclusions(rules))
	var out []reconcile.Action
	for _, d := range cl.Classify(ctx, cs) {
		if d.Class != image.ClassUndeclared || d.Excluded {
			continue
		}
		out = append(out, reconcile.Action{Entry: model.KindUndeclared, Path: d.Path, Drift: []drift.Kind{drift.Undeclared},
			Problem: "an undeclared change from the OS image (" + image.SettingsFile + ": mode drift): put back only when named",
			Command: "drift-monitor reconcile --image " + escape.Name(d.Path)})
	}
	return out, nil
}

// writeImageNodes writes the image's nodes through package reconcile, as
// declared entries: it writes only what differs (checked first), each
// atomically.
func writeImageNodes(ctx context.Context, r *ondisk.Root, entries []model.Entry, dryRun bool, labels *selinux.Contexts, labelled bool) reconcile.Result {
	c := &check.Checker{Root: r, Declared: ondisk.Declare(entries)}
	res := c.All(ctx, entries)
	todo, kinds := reconcile.Group(entries, res.Drift)
	rec := &reconcile.Reconciler{Root: r, Declared: c.Declared, Entries: entries, DryRun: dryRun}
	if labelled {
		rec.Labels = labels
	}
	return rec.Repair(ctx, todo, kinds)
}
