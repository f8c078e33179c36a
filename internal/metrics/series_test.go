package metrics

import (
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	dm "github.com/drift-monitor/drift-monitor/internal/model"
)

// series counts the series a snapshot of a host whose state declares
// entries of the kinds declared exports, clean, after its first check.
func series(t *testing.T, declared []dm.Kind, attribution string) int {
	t.Helper()
	mfs, err := Registry(Snapshot{State: "clean", Declared: declared, LastCheck: time.Now(), LastChange: time.Now(),
		Attribution: attribution}, "v").Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		n += len(mf.GetMetric())
	}
	return n
}

// TestSeriesPerHostInDocs: what docs/fleets.md says a host exports is what
// it exports: counted here, for a config of files, of the usual nodes and
// units, and of every kind of entry, and with attribution on.
func TestSeriesPerHostInDocs(t *testing.T) {
	var every []dm.Kind
	for _, m := range dm.Kinds {
		every = append(every, m.Kind)
	}
	usual := []dm.Kind{dm.KindFile, dm.KindDirectory, dm.KindLink, dm.KindUnit, dm.KindDropin, dm.KindMask, dm.KindEnablement}
	files, nodes, all := series(t, []dm.Kind{dm.KindFile}, ""), series(t, usual, ""), series(t, every, "")
	audit := series(t, every, "ok") - all
	if files >= nodes || nodes >= all {
		t.Fatalf("series: %d for files, %d for nodes and units, %d for every kind: more kinds, fewer series?", files, nodes, all)
	}
	raw, err := os.ReadFile("../../docs/fleets.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := regexp.MustCompile(`\s+`).ReplaceAllString(string(raw), " ")
	for _, c := range []struct {
		say  string
		want []int
	}{
		{`A host exports (\d+) series when its config declares files only, (\d+) when it declares files, directories, links and units \(with drop-ins, masks and enablement\), and (\d+) when it declares every kind of entry, whatever drifts \((\d+) more with`,
			[]int{files, nodes, all, audit}},
		{`the (\d+) of .drift_monitor_state\{state\}.`, []int{len(dbusapi.States)}},
		{`at most (\d+) series per host \((\d+) for a config of files, directories, links and units\): 10,000 hosts are at most ([0-9,]+) series`,
			[]int{all, nodes, all * 10000}},
	} {
		m := regexp.MustCompile(c.say).FindStringSubmatch(doc)
		if m == nil {
			t.Errorf("docs/fleets.md no longer says %q", c.say)
			continue
		}
		for i, w := range c.want {
			got, err := strconv.Atoi(regexp.MustCompile(`,`).ReplaceAllString(m[i+1], ""))
			if err != nil || got != w {
				t.Errorf("docs/fleets.md says %q where %d is counted: %q", m[i+1], w, m[0])
			}
		}
	}
}
