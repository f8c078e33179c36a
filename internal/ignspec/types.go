package ignspec

import (
	v3 "github.com/coreos/ignition/v2/config/v3_6"
	"github.com/coreos/ignition/v2/config/v3_6/types"
)

// The newest stable spec's types, the ones every config is parsed into:
// drift-monitor names them here only, so that a new spec changes this
// import and nothing outside the package.
type (
	Config         = types.Config
	Directory      = types.Directory
	File           = types.File
	FileEmbedded1  = types.FileEmbedded1
	KernelArgument = types.KernelArgument
	Link           = types.Link
	Node           = types.Node
	Passwd         = types.Passwd
	PasswdGroup    = types.PasswdGroup
	PasswdUser     = types.PasswdUser
	Resource       = types.Resource
	Storage        = types.Storage
	Unit           = types.Unit
	Verification   = types.Verification
)

// MaxVersion is the newest stable spec.
var MaxVersion = types.MaxVersion

// Ignition's functions of the newest spec.
var (
	// ParseCompatibleVersion is Ignition's parser of every stable spec
	// into the newest one (config/v3_6/config.go).
	ParseCompatibleVersion = v3.ParseCompatibleVersion
	// Merge is Ignition's merge of two configs of the newest spec.
	Merge = v3.Merge
)
