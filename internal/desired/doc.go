// Package desired turns a machine's declared configuration — Ignition
// configs, Butane configs and OpenShift MachineConfigs — into the plain list
// of entries that must hold on disk (package model's State).
//
// It is the load, stage by stage, each stage a package of its own with one
// job (load.go runs them in this order): discover lists the config files and
// refuses one another user could have written; statekey names the state
// they would derive, which a cache may hold; format tells each file's
// format, and parse.go hands it to its reader (ignition, butane,
// machineconfig), which gives a parsed.Fragment or a configerr.LoadError;
// merge merges the fragments; derive turns the merged config into entries,
// and the MachineConfig reader says where the machine-config daemon writes
// them otherwise; the host's SSH layout is applied last (sshlayout.go). A stage
// imports only the stages below it (cmd/drift-monitor's TestLoaderStages
// holds each to its layer and to what its job needs): so a reader cannot
// reach the merge or the derivation, and what needs only the files (the
// daemon's config watch, the state cache) links no reader, Butane's least
// of all. This package exists to run them in order and to be the one entry
// point of a load (LoadCached, LoadInRoot, LoadState, Parse) for its
// callers: the commands and the daemon.
//
// It promises: configs are parsed, validated and translated to the newest
// supported spec as Ignition's own packages do (package ignspec, which
// proves its quick path equal to Ignition's parser); fragments merge with
// Ignition's merge semantics; every entry carries a host path (never prefixed
// by a --root). It does not promise anything about the disk: deriving is pure,
// except for the target root's account databases, read by the load. It keeps
// nothing between loads itself: LoadCached goes through the statekey.Cache
// its caller passes (package statecache keeps states on disk), named by the
// statekey.Key of the inputs. It sets no process-wide setting: the memory
// limit a parse runs under is the caller's (Bound; memlimit.ConfigLoad).
package desired
