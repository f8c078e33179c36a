// Package machineconfig reads OpenShift MachineConfig objects: it tells
// one from an Ignition config (Detect), reads its spec.config through the
// Ignition reader and its fields beyond Ignition (kernel arguments,
// osImageURL, kernelType, extensions, fips) as the machine-config
// operator validates and merges them, and says where the machine-config
// daemon writes a host differently from Ignition (an empty drop-in
// deleted, passwords set, nothing relabelled, the certificate writer's
// files), so that what is desired is what the MCD would have written.
// What the operator and the MCD do is theirs, not Ignition's, and changes
// with their releases: a package of its own keeps it out of the Ignition
// reader, and lets the daemon and `check` ask it (ApplyMCDExemptions)
// without the rest of the load.
package machineconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/ignition"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// Parse reads a MachineConfig, which Detect found in raw: its spec.config as
// an Ignition config, and its kernel arguments added to that config's.
// reread is the dispatch's (see parseSpecConfig).
func Parse(file string, raw []byte, mc *Object, sup ignition.Supplies, reread types.Reopen) (parsed.Fragment, error) {
	frag := parsed.Fragment{File: file, MachineConfig: true}
	fields, err := mc.fields(file)
	if err != nil {
		return frag, err
	}
	frag.MCFields = &fields
	specVersion := specConfigVersion(mc.Spec.Config)
	switch {
	case strings.HasPrefix(specVersion, "2."):
		// The MCO translates a spec 2.x config with ign-converter, which
		// drift-monitor does not carry (nor does Ignition's config module):
		// say so rather than refuse the node's kernel arguments too.
		frag.Config.Ignition.Version = types.MaxVersion.String()
		frag.Unfetched = []parsed.Unfetched{{Ref: "spec.config", Source: "Ignition spec " + specVersion,
			Why: "drift-monitor reads Ignition spec 3.x only (the machine-config operator translates 2.x with ign-converter): " +
				"nothing spec.config declares is checked, only the kernel arguments"}}
	case len(bytes.TrimSpace(mc.Spec.Config)) > 0 && string(bytes.TrimSpace(mc.Spec.Config)) != "null":
		if err := readSpecConfig(&frag, raw, mc, specVersion, sup, reread); err != nil {
			return frag, err
		}
	default:
		frag.Config.Ignition.Version = types.MaxVersion.String()
	}
	addKernelArguments(&frag, mc.Spec.KernelArguments)
	return frag, nil
}

// readSpecConfig reads a MachineConfig's spec.config into frag (parsed by
// parseSpecConfig, fast.go, which may let mc.Spec.Config go).
func readSpecConfig(frag *parsed.Fragment, raw []byte, mc *Object, version string, sup ignition.Supplies, reread types.Reopen) error {
	cfg, rpt, err := parseSpecConfig(raw, mc, version, frag.File, reread)
	if err != nil {
		// Positions would point into the re-encoded spec.config, not into the
		// file: report the config path only.
		le := ignition.ReportError(frag.File, mc.Spec.Config, rpt, err, false)
		if le.Context != "" {
			le.Context = "spec.config" + strings.TrimPrefix(le.Context, "$")
		} else {
			le.Context = "spec.config"
		}
		return le
	}
	frag.Config = cfg
	frag.Warnings = ignition.Warnings(rpt)
	// Validated as it is, until kernel arguments are added (addKernelArguments).
	frag.Validated = true
	if ignition.WarnsSpecialBits(rpt) {
		frag.SpecialBits = ignition.DeclaredSpecialBits(mc.Spec.Config)
	}
	if err := ignition.ResolveChildren(frag, sup); err != nil {
		return &configerr.LoadError{File: frag.File, Context: "spec.config", Err: err}
	}
	return ignition.CheckDecodable(frag.File, frag.Config, "spec.config", -1)
}

// addKernelArguments adds a MachineConfig's spec.kernelArguments to frag's
// shouldExist.
//
// kernelArguments is a list in which repeats are normal (hugepagesz=1G
// hugepages=4 hugepagesz=2M hugepages=4): the MCD checks that every
// declared argument is on the command line (machine-config-operator
// pkg/daemon/daemon.go, validateKernelArguments), not Ignition's
// shouldExist set, whose validation forbids duplicates. One entry per
// distinct argument is that check.
func addKernelArguments(frag *parsed.Fragment, args []string) {
	seen := map[types.KernelArgument]bool{}
	for _, a := range frag.Config.KernelArguments.ShouldExist {
		seen[a] = true
	}
	for _, s := range args {
		// The MCO splits each entry into arguments (rhbz#1812605): "a b" is two.
		for _, a := range model.SplitKernelArguments(s) {
			if ka := types.KernelArgument(a); !seen[ka] {
				seen[ka] = true
				frag.Config.KernelArguments.ShouldExist = append(frag.Config.KernelArguments.ShouldExist, ka)
				// merge.All validates them with spec.config's (one may be
				// in shouldNotExist).
				frag.Validated = false
			}
		}
	}
}

type Object struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Spec       struct {
		Config          json.RawMessage `json:"config"`
		KernelArguments []string        `json:"kernelArguments"`
		// The fields beyond Ignition (see fields.go).
		OSImageURL *string  `json:"osImageURL"`
		KernelType *string  `json:"kernelType"`
		Extensions []string `json:"extensions"`
		FIPS       *bool    `json:"fips"`
	} `json:"spec"`
}

// Detect decides whether raw JSON is a MachineConfig object rather
// than an Ignition config, by its kind; it also returns the ignition.version
// raw declares (for an Ignition config), from the same reading: each reading
// of a large config scans all of it.
func Detect(raw []byte) (mc Object, isMC bool, version string, err error) {
	if v, ok := types.PlainIgnitionVersion(raw); ok {
		// What the probe below would read: a config, its version v.
		return Object{}, false, v, nil
	}
	if mc, ok := Plain(raw); ok {
		return mc, true, "", nil // fast.go: spec.config not decoded here
	}
	if kind, ok := types.PlainKind(raw); ok && kind == "MachineConfig" {
		// What the probe would find, when raw decodes as a MachineConfig:
		// its kind, no ignition section, a spec that is an object. One
		// decoding of a large MachineConfig instead of two.
		if err := json.Unmarshal(raw, &mc); err == nil {
			return mc, true, "", nil
		}
		mc = Object{}
	}
	return Probe(raw)
}

// Probe is Detect, reading raw with encoding/json alone: the oracle the
// tests hold Detect's shortcuts to.
func Probe(raw []byte) (mc Object, isMC bool, version string, err error) {
	var probe struct {
		Kind     *string `json:"kind"`
		Ignition *struct {
			Version string `json:"version"`
		} `json:"ignition"`
		Spec *struct {
			Config json.RawMessage `json:"config"`
		} `json:"spec"`
	}
	err = json.Unmarshal(raw, &probe)
	// The MCD's /etc/machine-config-daemon/currentconfig is a MachineConfig
	// that lost its kind and apiVersion (a typed object from the informer's
	// cache, marshalled: machine-config-operator pkg/daemon/daemon.go,
	// storeCurrentConfigOnDisk). Its shape tells it: a spec holding a config,
	// and no ignition section of its own.
	currentConfig := err == nil && probe.Kind == nil && probe.Ignition == nil && probe.Spec != nil && len(probe.Spec.Config) > 0
	if !currentConfig && (err != nil || probe.Kind == nil) {
		// Not a MachineConfig; Ignition's parser reports syntax errors with
		// positions.
		if probe.Ignition != nil {
			version = probe.Ignition.Version
		}
		return Object{}, false, version, nil
	}
	if !currentConfig && *probe.Kind != "MachineConfig" {
		return Object{}, false, "", fmt.Errorf("unsupported object kind %q (want an Ignition config or kind: MachineConfig)", *probe.Kind)
	}
	if err := json.Unmarshal(raw, &mc); err != nil {
		return mc, false, "", fmt.Errorf("invalid MachineConfig: %w", err)
	}
	return mc, true, "", nil
}
