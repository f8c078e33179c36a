#!/bin/sh
# release-goflags.sh prints the go command flags that build drift-monitor
# as it is released: without the test helpers Butane's module compiles
# into its translator.
#
# Why: ignition v2.27.0 butane/base/util/test.go is not a _test.go file,
# so every Butane translator (butane/base/v0_N, imported by each variant)
# links it, and with it the testing package, github.com/stretchr/testify
# and net/http/httptest (testify/assert's http_assertions.go), whose
# init registers a -httptest.serve flag. Nothing of the program calls it.
# The translator itself must stay the module's own (DESIGN: Butane is
# translated as Ignition translates it at boot), and the go command
# refuses an -overlay of a file in the module cache, so the release build
# uses a copy of the module without that one file:
#   - with vendor/ (the RPM's build, from make rpm's tarball), the file
#     is removed from vendor/ and nothing is printed;
#   - otherwise a copy of the module without it is made once per version
#     under _build/release-mod/, and "-modfile=_build/release-mod/go.mod"
#     (go.mod with a replace of the module by that copy) is printed.
# cmd/drift-monitor's TestReleaseDeps holds the result to depaware.txt.
set -eu
cd "$(dirname "$0")/.."
module=github.com/coreos/ignition/v2
helpers=butane/base/util/test.go
if [ -d vendor ]; then
	rm -f "vendor/$module/$helpers"
	exit 0
fi
version=$(go list -m -f '{{.Version}}' "$module")
src=$(go list -m -f '{{.Dir}}' "$module")
dir=$PWD/_build/release-mod
copy=$dir/ignition@$version
mkdir -p "$dir"
if [ ! -f "$copy/go.mod" ]; then
	# Made aside and renamed into place: builds run side by side (the
	# test tiers), and none may see half a copy.
	tmp=$(mktemp -d "$dir/.copy.XXXXXX")
	cp -R "$src/." "$tmp/"
	chmod -R u+w "$tmp"
	rm "$tmp/$helpers"
	mv -T "$tmp" "$copy" 2>/dev/null || rm -rf "$tmp"
fi
tmp=$(mktemp "$dir/.go.mod.XXXXXX")
{ cat go.mod; printf '\nreplace %s => %s\n' "$module" "$copy"; } >"$tmp"
mv -f "$tmp" "$dir/go.mod"
tmp=$(mktemp "$dir/.go.sum.XXXXXX")
cp go.sum "$tmp"
mv -f "$tmp" "$dir/go.sum"
echo "-modfile=$dir/go.mod"
