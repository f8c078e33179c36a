#!/bin/sh
# release-goenv.sh prints the environment, as NAME=VALUE words, under
# which the go command builds drift-monitor as it is released: without the
# test helpers Butane's module compiles into its translator. Use it as
#   goenv=$(./tools/release-goenv.sh) && env $goenv go build ...
#
# Why: ignition v2.27.0 butane/base/util/test.go is not a _test.go file,
# so every Butane translator (butane/base/v0_N, imported by each variant)
# links it, and with it the testing package, github.com/stretchr/testify
# and net/http/httptest (testify/assert's http_assertions.go), whose
# init registers a -httptest.serve flag. Nothing of the program calls it.
# The translator itself must stay the module's own (DESIGN: Butane is
# translated as Ignition translates it at boot), and the go command
# refuses an -overlay of a file in the module cache, so the release build
# reads the modules from a vendor directory without that one file:
#   - with vendor/ (the RPM's build, from make rpm's tarball, built with
#     -mod=vendor), the file is removed from vendor/ and nothing is printed;
#   - otherwise a workspace of this module alone is made under
#     _build/release-work/KEY/ with `go work vendor` (its vendor/ beside
#     its go.work: the go command's vendor directory in workspace mode,
#     used by default there), the file removed from it, and
#     "GOWORK=…/go.work" is printed.
# Vendored, every module keeps its path and version in the binary's build
# info (go version -m; without the go.sum hashes, which vendor/ does not
# carry), as SBOM generators and vulnerability scanners read it; a replace
# of the module by a trimmed copy would show it as "(devel)" at the
# checkout's path. KEY is a digest of what decides the vendored files:
# the go command's version, go.mod, go.sum, the packages this module
# imports and this script. A key seen before costs a `go list` of this
# module's imports; a new one a `go work vendor` as well (make bench's
# report says how long make build takes).
# cmd/drift-monitor's TestReleaseDeps holds the result to depaware.txt.
set -eu
cd "$(dirname "$0")/.."
module=github.com/coreos/ignition/v2
helpers=butane/base/util/test.go
if [ -d vendor ]; then
	rm -f "vendor/$module/$helpers"
	exit 0
fi
unset GOWORK
imports=$(go list -e -f '{{join .Imports "\n"}}
{{join .TestImports "\n"}}
{{join .XTestImports "\n"}}' ./... | sort -u)
key=$({ go version; cat go.mod go.sum; printf '%s\n' "$imports"; cat tools/release-goenv.sh; } | sha256sum | cut -c1-16)
dir=$PWD/_build/release-work
work=$dir/$key
if [ ! -f "$work/vendor/modules.txt" ]; then
	mkdir -p "$dir"
	# Made aside and renamed into place: builds run side by side (the
	# test tiers), and none may see half a workspace. Its go.work names
	# this module by a relative path, the same from the final place.
	tmp=$(mktemp -d "$dir/.work.XXXXXX")
	(cd "$tmp" && go work init ../../.. && GOWORK="$tmp/go.work" GOFLAGS= go work vendor) >&2
	rm -f "$tmp/vendor/$module/$helpers"
	mv -T "$tmp" "$work" 2>/dev/null || rm -rf "$tmp"
	# Workspaces of other keys (older imports, an older go.mod) and the
	# copy of the module the release build used before.
	find "$dir" -mindepth 1 -maxdepth 1 -type d ! -name "$key" ! -name '.*' -exec rm -rf {} +
	rm -rf _build/release-mod
fi
echo "GOWORK=$work/go.work"
