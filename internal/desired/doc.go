// Package desired turns a machine's declared configuration — Ignition
// configs, Butane configs and OpenShift MachineConfigs — into the plain list
// of entries that must hold on disk (package model's State).
//
// It is the load, stage by stage, each stage a package of its own with one
// job (load.go runs them in this order): discover lists the config files and
// refuses one another user could have written; format.go tells each file's
// format and hands it to its reader (ignition, butane, machineconfig), which
// gives a parsed.Fragment or a configerr.LoadError; merge merges the
// fragments; derive turns the merged config into entries, and the
// MachineConfig reader says where the machine-config daemon writes them
// otherwise; the host's SSH layout is applied last (sshlayout.go).
//
// It promises: configs are parsed, validated and translated to the newest
// supported spec as Ignition's own packages do (package ignspec, which
// proves its quick path equal to Ignition's parser); fragments merge with
// Ignition's merge semantics; every entry carries a host path (never prefixed
// by a --root). It does not promise anything about the disk: deriving is pure,
// except for the target root's account databases, read by the load. It keeps
// nothing between loads itself: LoadCached goes through the statekey.Cache its
// caller passes (package statecache keeps states on disk), named by a statekey.Key of
// the inputs. It sets no process-wide setting: the memory limit a parse runs
// under is the caller's (Bound).
package desired
