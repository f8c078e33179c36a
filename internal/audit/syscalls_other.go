//go:build !amd64

package audit

// legacySyscalls: architectures other than x86_64 have only the *at forms.
var legacySyscalls = map[int]string{}
