package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/exclude"
	"github.com/drift-monitor/drift-monitor/internal/image"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// imageFlag is check's and the daemon's --image[=notice|drift|off]: a
// mode for this run, over the settings file's (image.SettingsFile, which
// the daemon, check and reconcile read alike); a bare --image lists every
// difference with its class (check only), in the settings file's mode.
type imageFlag struct {
	mode image.Mode // "" : the settings file's
	list bool
}

func (f *imageFlag) String() string {
	if f.list {
		return "true"
	}
	return string(f.mode)
}

func (f *imageFlag) IsBoolFlag() bool { return true }

func (f *imageFlag) Set(v string) error {
	if v == "true" {
		f.list = true
		return nil
	}
	m, err := image.ParseMode(v)
	if err != nil {
		return fmt.Errorf("want notice, drift or off (or --image alone, to list every difference)")
	}
	f.mode = m
	return nil
}

const imageUsage = "the OS image's /etc, for this run: =notice (the default) reports undeclared changes as notices, =drift as drift, =off not at all (default: " +
	image.SettingsFile + "'s mode); --image alone lists every difference with its class"

// trustSettings refuses a settings file another user could have written,
// as a config is refused (discover.CheckWriters).
func trustSettings(r *ondisk.Root) func(string, *os.File) error {
	return func(p string, f *os.File) error { return discover.CheckWriters(r, p, f) }
}

// imageModeOf is the mode a command runs in: the flag's, else the settings
// file's inside r.
func imageModeOf(r *ondisk.Root, flag image.Mode) (image.Mode, error) {
	if flag != "" {
		return flag, nil
	}
	return image.LoadMode(r, trustSettings(r))
}

// imageResult is what a check found of the image.
type imageResult struct {
	Mode        image.Mode
	List        bool
	Kind        image.HostKind
	Source      string
	Unavailable string
	Differences []image.Difference
	// Undeclared counts the undeclared differences reported, Excluded
	// those the exclusions leave unreported.
	Undeclared, Excluded int
}

// imageLook is the comparison of the root's /etc with its image, started
// before the declared check and run beside it: it needs nothing the
// desired state says (only classifying its differences does), and on an
// rpm host the query of the rpm database is most of a check's time.
type imageLook struct {
	mode   image.Mode
	b      *image.Baseline
	cs     []image.Change
	err    error
	done   chan struct{}
	cancel context.CancelFunc
}

// startImage starts comparing the root's /etc with its image, unless the
// mode turns the image off and nothing is listed.
func startImage(ctx context.Context, r *ondisk.Root, f imageFlag) *imageLook {
	l := &imageLook{done: make(chan struct{}), cancel: func() {}}
	l.mode, l.err = imageModeOf(r, f.mode)
	if l.err != nil || (l.mode == image.ModeOff && !f.list) {
		close(l.done)
		return l
	}
	ctx, l.cancel = context.WithCancel(ctx)
	go func() {
		defer close(l.done)
		l.b, l.cs, l.err = image.FindDiff(ctx, r)
	}()
	return l
}

// close stops a comparison still running (the check failed before it was
// needed) and releases the baseline.
func (l *imageLook) close() {
	l.cancel()
	<-l.done
	if l.b != nil {
		l.b.Close()
	}
}

// checkImage adds what the comparison l found to res: the undeclared
// differences as notices or drift (by mode), and, listing, every
// difference.
func checkImage(ctx context.Context, r *ondisk.Root, st *model.State, l *imageLook, f imageFlag, rules *exclude.Rules, res *checkResult, warn io.Writer) error {
	<-l.done
	mode, b, cs := l.mode, l.b, l.cs
	if l.err != nil {
		return l.err
	}
	if b == nil {
		return nil // the image is off
	}
	if b.Kind == image.KindNone && mode == image.ModeNotice && !f.list {
		// Not an image host: nothing to say unless asked (the daemon
		// says the same).
		return nil
	}
	ir := &imageResult{Mode: mode, List: f.list, Kind: b.Kind, Source: b.Source, Unavailable: b.Unavailable}
	res.Image = ir
	if !b.Available() {
		res.Notices = append(res.Notices, drift.Drift{Kind: drift.NotChecked, Entry: model.KindUndeclared, Path: image.EtcDir,
			EntryID: string(model.KindUndeclared) + ":" + image.EtcDir, Message: "the OS image's /etc is not compared: " + b.Unavailable})
		drift.Sort(res.Notices)
		return nil
	}
	if err := mergeNotices(ctx, r, b, st, res); err != nil {
		return err
	}
	if u := b.Extensions.Unknown(); u != "" {
		fmt.Fprintf(warn, "drift-monitor check: warning: %s\n", escape.Text(u))
	}
	key, _ := hostKey()
	cl, err := image.NewClassifierFor(r, b, st.Entries, key, imageExclusions(rules))
	if err != nil {
		fmt.Fprintf(warn, "drift-monitor check: warning: %s\n", escape.Text(err.Error()))
	}
	ir.Differences = cl.Classify(ctx, cs)
	for i := range ir.Differences {
		d := &ir.Differences[i]
		switch {
		case d.Class != image.ClassUndeclared:
			continue
		case d.Excluded:
			ir.Excluded++
			continue
		}
		ir.Undeclared++
		switch {
		case mode == image.ModeDrift:
			res.Drift = append(res.Drift, d.Drift(b.Source))
		case mode == image.ModeNotice && !f.list:
			// Listed, they are no notices of their own.
			res.Notices = append(res.Notices, d.Drift(b.Source))
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
	return rules.DriftFilter()
}

// imageJSON is the report's "image" object.
type imageJSON struct {
	Mode        image.Mode       `json:"mode"`
	List        bool             `json:"list,omitempty"`
	Baseline    image.HostKind   `json:"baseline"`
	Source      string           `json:"source,omitempty"`
	Unavailable string           `json:"unavailable,omitempty"`
	Undeclared  int              `json:"undeclared"`
	Excluded    int              `json:"excluded"`
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
	j := &imageJSON{Mode: ir.Mode, List: ir.List, Baseline: ir.Kind, Source: ir.Source, Unavailable: ir.Unavailable, Undeclared: ir.Undeclared, Excluded: ir.Excluded}
	if !ir.List {
		return j
	}
	j.Differences = []differenceJSON{}
	for i := range ir.Differences {
		d := &ir.Differences[i]
		j.Differences = append(j.Differences, differenceJSON{Path: d.Path, Change: d.Op.String(), What: d.What.Names(),
			Class: string(d.Class), Why: d.Why, Excluded: d.Excluded, Package: d.Owner, RPM: d.RPM, Error: d.Err,
			Message: d.Describe()})
	}
	return j
}

// writeImageList prints every difference with its class, one a line,
// then a summary line that counts the excluded undeclared ones apart.
func writeImageList(ew *errWriter, ir *imageResult) {
	if ir == nil || !ir.List {
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
		if d.Excluded {
			class += " (excluded)"
		} else {
			counts[d.Class]++
		}
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
	if ir.Excluded > 0 {
		parts = append(parts, fmt.Sprintf("%d excluded", ir.Excluded))
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
	key, err := hostKey()
	if err != nil || !key.Valid() {
		why := "no digest key"
		if err != nil {
			why = err.Error()
		}
		fmt.Fprintf(std.Err, "drift-monitor adopt: warning: %s: the contents of files are not recorded (a file found later is undeclared)\n", escape.Text(why))
	}
	rc := &image.Recorder{Root: r, Key: key}
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
	if len(res.Drift) == 0 {
		// Nothing to explain: the index below would cost a clean check a
		// string and a map slot per declared entry, for nothing.
		return
	}
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
