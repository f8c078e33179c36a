// Package desired turns a machine's declared configuration — Ignition configs
// and OpenShift MachineConfigs — into the plain list of entries that must hold
// on disk (package model's State).
//
// It promises: configs are parsed, validated and translated to the newest
// supported spec as Ignition's own packages do (package ignspec, which
// proves its quick path equal to Ignition's parser); fragments merge with
// Ignition's merge semantics; every entry carries a host path (never prefixed
// by a --root). It does not promise anything about the disk: deriving is pure,
// except for the target root's account databases, read through Accounts.
// It keeps nothing between loads itself: LoadCached goes through the Cache
// its caller passes (package statecache keeps states on disk), named by a
// StateKey of the inputs.
package desired
