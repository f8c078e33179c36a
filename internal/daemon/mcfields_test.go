package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// TestMCDCertificateNotice: the daemon journals a MachineConfig's file that
// the MCD's certificate writer owns as a not-checked notice, never as
// drift, unless CheckMCDCertificates.
func TestMCDCertificateNotice(t *testing.T) {
	for _, checkCerts := range []bool{false, true} {
		ctx := context.Background()
		d, _, log := syntheticDaemon(t, Options{CheckMCDCertificates: checkCerts})
		const ca = "/etc/kubernetes/kubelet-ca.crt"
		writeFile(t, filepath.Join(d.o.Root, ca), []byte("rotated by the certificate writer\n"))
		mc := filepath.Join(d.o.Root, "mc.yaml")
		d.o.Configs = append(d.o.Configs, mc)
		if err := os.WriteFile(mc, []byte("kind: MachineConfig\nspec:\n  config:\n    ignition: {version: 3.4.0}\n"+
			"    storage: {files: [{path: "+ca+", mode: 0644, contents: {source: 'data:,installer%20CA'}}]}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := d.load(ctx); err != nil {
			t.Fatal(err)
		}
		d.fullCheck(ctx, "first check")
		notices, drifts := log.find(journal.MsgNotice, ca), log.find(journal.RecordDriftDetected, ca)
		switch {
		case !checkCerts && (len(notices) != 1 || notices[0]["DRIFT_KIND"] != "not-checked" || len(drifts) != 0):
			t.Errorf("notices %v, drift %v: want one not-checked notice and no drift", notices, drifts)
		case checkCerts && (len(notices) != 0 || len(drifts) != 1):
			t.Errorf("with CheckMCDCertificates: notices %v, drift %v: want the content drift alone", notices, drifts)
		}
	}
}

// TestIndexSkipsMachineConfigFields: the fields beyond Ignition are
// checked by full checks, nothing at their paths is watched.
func TestIndexSkipsMachineConfigFields(t *testing.T) {
	ix := newIndex([]model.Entry{
		{Kind: model.KindOSImage, Path: model.OSImagePath, Type: model.TypeNone, Arg: "q/o:1"},
		{Kind: model.KindFIPS, Path: model.FIPSPath, Type: model.TypeNone, Arg: "true", ArgPresent: true},
		{Kind: model.KindNotChecked, Path: "/etc/kubernetes/kubelet-ca.crt", Type: model.TypeNone},
	})
	if len(ix.dirs) != 0 || ix.paths != 0 {
		t.Errorf("watched %v (%d paths): want nothing", ix.dirs, ix.paths)
	}
}
