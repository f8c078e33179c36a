package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/exclude"
	"github.com/drift-monitor/drift-monitor/internal/firstboot"
	"github.com/drift-monitor/drift-monitor/internal/image"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// imageMode is what check (and the daemon) make of the differences from
// the OS image's /etc (package image): --image=notice (the default)
// reports the undeclared ones as notices, --image=drift as drift,
// --image=off not at all, and a bare --image lists every difference with
// its class.
type imageMode string

const (
	imageNotice imageMode = "notice"
	imageDrift  imageMode = "drift"
	imageOff    imageMode = "off"
	imageList   imageMode = "list"
)

// imageFlag is --image[=notice|drift|off].
type imageFlag struct{ mode imageMode }

func (f *imageFlag) String() string   { return string(f.mode) }
func (f *imageFlag) IsBoolFlag() bool { return true }
func (f *imageFlag) Set(v string) error {
	switch imageMode(v) {
	case "true":
		f.mode = imageList
	case imageNotice, imageDrift, imageOff:
		f.mode = imageMode(v)
	default:
		return fmt.Errorf("want notice, drift or off (or --image alone, to list every difference)")
	}
	return nil
}

const imageUsage = "the OS image's /etc: =notice (default) reports undeclared changes as notices, =drift as drift, =off not at all; --image alone lists every difference with its class"

// imageResult is what a check found of the image.
type imageResult struct {
	Mode        imageMode
	Kind        image.HostKind
	Source      string
	Unavailable string
	Differences []image.Difference
	// Excluded marks the differences an exclusion leaves unreported.
	Excluded   []bool
	Undeclared int
}

// checkImage compares the root's /etc with its image and adds what it
// found to res: the undeclared differences as notices or drift (by mode),
// or, listing, every difference.
func checkImage(ctx context.Context, r *ondisk.Root, st *model.State, mode imageMode, rules *exclude.Rules, res *checkResult, warn io.Writer) error {
	if mode == imageOff {
		return nil
	}
	b, err := image.Find(ctx, r)
	if err != nil {
		return err
	}
	defer b.Close()
	if b.Kind == image.KindNone && mode == imageNotice {
		// Not an image host: nothing to say unless asked.
		return nil
	}
	ir := &imageResult{Mode: mode, Kind: b.Kind, Source: b.Source, Unavailable: b.Unavailable}
	res.Image = ir
	if !b.Available() {
		res.Notices = append(res.Notices, drift.Drift{Kind: drift.NotChecked, Entry: model.KindUndeclared, Path: image.EtcDir,
			EntryID: string(model.KindUndeclared) + ":" + image.EtcDir, Message: "the OS image's /etc is not compared: " + b.Unavailable})
		drift.Sort(res.Notices)
		return nil
	}
	cs, err := b.Diff(ctx, r)
	if err != nil {
		return fmt.Errorf("comparing %s with the image: %w", image.EtcDir, err)
	}
	if err := mergeNotices(ctx, r, b, st, res); err != nil {
		return err
	}
	if u := b.Extensions.Unknown(); u != "" {
		fmt.Fprintf(warn, "drift-monitor check: warning: %s\n", escape.Text(u))
	}
	cl := image.NewClassifier(st.Entries)
	cl.Extensions = b.Extensions
	key, _ := hostKeyBytes()
	cl.Recorder = &image.Recorder{Root: r, Key: key, KeyID: firstboot.KeyID(key)}
	if cl.Record, err = image.LoadRecord(r, image.RecordPath); err != nil {
		fmt.Fprintf(warn, "drift-monitor check: warning: the first boot's record of /etc is not used: %s\n", escape.Text(err.Error()))
	}
	excluded := imageExclusions(rules)
	ir.Differences = cl.Classify(ctx, cs)
	ir.Excluded = make([]bool, len(ir.Differences))
	for i := range ir.Differences {
		d := &ir.Differences[i]
		if d.Class != image.ClassUndeclared {
			continue
		}
		dr := d.Drift(b.Source)
		if excluded(&dr) {
			ir.Excluded[i] = true
			continue
		}
		ir.Undeclared++
		switch mode {
		case imageNotice:
			res.Notices = append(res.Notices, dr)
		case imageDrift:
			res.Drift = append(res.Drift, dr)
		}
	}
	drift.Sort(res.Notices)
	drift.Sort(res.Drift)
	return nil
}

// imageExclusions says which of the image's differences the rules leave
// unreported, as they leave any drift (package exclude: the daemon's
// rules, so that check and the daemon agree).
func imageExclusions(rules *exclude.Rules) func(*drift.Drift) bool {
	f := rules.DriftFilter()
	return func(d *drift.Drift) bool { return f != nil && f(d) }
}

// imageJSON is the report's "image" object.
type imageJSON struct {
	Mode        imageMode        `json:"mode"`
	Baseline    image.HostKind   `json:"baseline"`
	Source      string           `json:"source,omitempty"`
	Unavailable string           `json:"unavailable,omitempty"`
	Undeclared  int              `json:"undeclared"`
	Differences []differenceJSON `json:"differences,omitempty"`
}

type differenceJSON struct {
	Path     string   `json:"path"`
	Change   string   `json:"change"`
	What     []string `json:"what,omitempty"`
	Class    string   `json:"class"`
	Why      string   `json:"why,omitempty"`
	Excluded bool     `json:"excluded,omitempty"`
	Package  string   `json:"package,omitempty"`
	RPM      string   `json:"rpm,omitempty"`
	Error    string   `json:"error,omitempty"`
	Message  string   `json:"message"`
}

func (ir *imageResult) json() *imageJSON {
	if ir == nil {
		return nil
	}
	j := &imageJSON{Mode: ir.Mode, Baseline: ir.Kind, Source: ir.Source, Unavailable: ir.Unavailable, Undeclared: ir.Undeclared}
	if ir.Mode != imageList {
		return j
	}
	j.Differences = []differenceJSON{}
	for i := range ir.Differences {
		d := &ir.Differences[i]
		j.Differences = append(j.Differences, differenceJSON{Path: d.Path, Change: d.Op.String(), What: d.What.Names(),
			Class: string(d.Class), Why: d.Why, Excluded: ir.Excluded[i], Package: d.Owner, RPM: d.RPM, Error: d.Err,
			Message: d.Describe()})
	}
	return j
}

// writeImageList prints every difference with its class, one a line,
// then a summary line.
func writeImageList(ew *errWriter, ir *imageResult) {
	if ir == nil || ir.Mode != imageList {
		return
	}
	if ir.Unavailable != "" {
		ew.printf("Image: %s\n", escape.Text(ir.Unavailable))
		return
	}
	ew.printf("Image: %s (%s)\n", escape.Text(ir.Source), ir.Kind)
	counts := map[image.Class]int{}
	for i := range ir.Differences {
		d := &ir.Differences[i]
		class := string(d.Class)
		if ir.Excluded[i] {
			class += " (excluded)"
		}
		counts[d.Class]++
		line := fmt.Sprintf("  %-23s %c  %s  %s", class, d.Op, escape.Name(d.Path), escape.Text(d.Describe()))
		if d.Why != "" && d.Class != image.ClassUndeclared {
			line += "  [" + escape.Name(d.Why) + "]"
		}
		ew.printf("%s\n", line)
	}
	var parts []string
	for _, c := range image.Classes {
		parts = append(parts, fmt.Sprintf("%d %s", counts[c], c))
	}
	ew.printf("Image: %s: %s.\n", count(len(ir.Differences), "difference", "differences"), strings.Join(parts, ", "))
}

// adoptImage is `drift-monitor adopt --image`: the first boot's record of
// what /etc differs in from the image (image.RecordNow), which
// drift-monitor-adopt-image.service makes once the first boot is up.
func adoptImage(r *ondisk.Root, std Stdio) int {
	ctx := context.Background()
	b, err := image.Find(ctx, r)
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor adopt: %s\n", escape.Text(err.Error()))
		return ExitFailed
	}
	defer b.Close()
	if !b.Available() {
		fmt.Fprintf(std.Out, "nothing recorded: %s\n", escape.Text(b.Unavailable))
		return 0
	}
	key, err := hostKeyBytes()
	if err != nil || key == nil {
		why := "no digest key"
		if err != nil {
			why = err.Error()
		}
		fmt.Fprintf(std.Err, "drift-monitor adopt: warning: %s: the contents of files are not recorded (a file found later is undeclared)\n", escape.Text(why))
	}
	rc := &image.Recorder{Root: r, Key: key, KeyID: firstboot.KeyID(key)}
	n, err := image.RecordNow(ctx, r, b, rc, image.RecordPath)
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor adopt: recording %s: %s\n", escape.Text(r.Join(image.RecordPath)), escape.Text(err.Error()))
		return ExitFailed
	}
	fmt.Fprintf(std.Out, "recorded %s of /etc's differences from the image (%s) in %s\n", count(n, "new path", "new paths"), escape.Text(b.Source), escape.Text(r.Join(image.RecordPath)))
	return 0
}

// mergeNotices adds what the staged deployment's /etc merge will undo of
// the declared paths (image.Merge.Losses), as merge-loss notices: the
// preflight an update tool runs.
func mergeNotices(ctx context.Context, r *ondisk.Root, b *image.Baseline, st *model.State, res *checkResult) error {
	if b.Kind != image.KindOstree {
		return nil
	}
	m, staged, err := image.StagedMerge(ctx, r)
	if err != nil {
		return fmt.Errorf("the staged deployment: %w", err)
	}
	if m == nil {
		return nil
	}
	for _, l := range m.Losses(ctx, st.Entries) {
		res.Notices = append(res.Notices, l.Drift(staged))
	}
	drift.Sort(res.Notices)
	return nil
}

// explainMerges adds to each declared file's content drift, after an OS
// update, that the update's /etc merge replaced it, where it did
// (image.Explain): the file is the booted image's default, and a previous
// deployment's default is the declared content.
func explainMerges(c *check.Checker, st *model.State, res *check.Result) {
	byID := map[string]*model.Entry{}
	for i := range st.Entries {
		byID[st.Entries[i].ID()] = &st.Entries[i]
	}
	o := c.Observer()
	defer o.Close()
	for i := range res.Drift {
		d := &res.Drift[i]
		e := byID[d.EntryID]
		if e == nil {
			continue
		}
		if why := image.ExplainDrift(c, o, e, d); why != "" {
			d.Message += " (" + why + ")"
		}
	}
}
