package drift

// Undeclared is a difference between the OS image's /etc and the live one
// that no config declares (package image). It is a notice by default: the
// daemon's and check's --image=drift make it drift.
const Undeclared Kind = "undeclared"

// ImageKinds are the kinds of difference from the OS image.
var ImageKinds = []Kind{Undeclared, MergeLoss}

// MergeLoss is a notice, before an OS update: the staged deployment's /etc
// merge will undo what a config declares of a path (package image, Merge).
const MergeLoss Kind = "merge-loss"
