#!/usr/bin/env bash
# make rpm: build drift-monitor's source tarball, SRPM and binary RPM.
#
#   packaging/build-rpm.sh            # or: make rpm [RELEASE=N] [RPM_TOPDIR=DIR]
#
# 1. The source tarball DIR/SOURCES/drift-monitor-VERSION.tar.gz: the files
#    git knows (tracked, or new and not ignored) as they are in the working
#    tree, which is what `make build` builds, plus vendor/ from
#    `go mod vendor`, so that rpmbuild needs no network. Its file times and
#    owners are fixed (the last commit's time, root), so the same tree gives
#    the same tarball.
# 2. rpmbuild -ba drift-monitor.spec with _topdir DIR (default _build/rpm):
#    DIR/SRPMS/drift-monitor-VERSION-RELEASE.src.rpm and
#    DIR/RPMS/ARCH/drift-monitor-VERSION-RELEASE.ARCH.rpm. It runs in a
#    network namespace of its own where unshare(1) can make one (root), which
#    proves the build offline.
#
# RELEASE (default 1) becomes the package's Release (rpmbuild --define
# 'baserelease N'): a rebuild of the same version that rpm -U takes as an
# upgrade. VERSION comes from the file VERSION and must equal the spec's.
# RPMBUILD_FLAGS adds options to rpmbuild.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
spec=drift-monitor.spec
topdir=${RPM_TOPDIR:-$top/_build/rpm}
case $topdir in /*) ;; *) topdir=$top/$topdir ;; esac
release=${RELEASE:-1}

die() { echo "build-rpm: $*" >&2; exit 1; }
for tool in git go rpmbuild rpmspec tar gzip; do
  command -v "$tool" >/dev/null || die "$tool is not on PATH"
done
[[ $release =~ ^[0-9]+$ ]] || die "RELEASE must be a number, not '$release'"
version=$(cat VERSION)
specversion=$(rpmspec -q --srpm --qf '%{version}' "$spec")
[ "$version" = "$specversion" ] || die "VERSION says $version but $spec says Version: $specversion"

name=drift-monitor-$version
mkdir -p "$topdir"/{SOURCES,SPECS,BUILD,RPMS,SRPMS}
stage=$(mktemp -d "$topdir/stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT

# The tree: what git knows, minus what was deleted but not yet committed.
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do
    if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
  done |
  tar --null --no-recursion -T - -cf - | tar -xf - -C "$stage" --one-top-level="$name"
[ ! -e "$stage/$name/vendor" ] || die "vendor/ is in the tree: it belongs in the tarball only"
(cd "$stage/$name" && GOFLAGS=-mod=mod GOWORK=off go mod vendor)

epoch=$(git log -1 --format=%ct 2>/dev/null || date +%s)
tarball=$topdir/SOURCES/$name.tar.gz
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
  -C "$stage" -cf - "$name" | gzip -9n >"$tarball.tmp"
mv "$tarball.tmp" "$tarball"

args=(--define "_topdir $topdir" --define "baserelease $release" -ba "$spec")
# Debian's rpm database does not know the BuildRequires (golang, gcc,
# go-rpm-macros...): nothing installed with dpkg is in it.
if ! rpm -q --quiet rpm 2>/dev/null; then
  args=(--nodeps "${args[@]}")
fi
# shellcheck disable=SC2206 # RPMBUILD_FLAGS is a list of words
args=(${RPMBUILD_FLAGS:-} "${args[@]}")
offline=()
if unshare --net true 2>/dev/null; then
  offline=(unshare --net)
else
  echo "build-rpm: cannot unshare the network; building with GOPROXY=off only" >&2
fi
SOURCE_DATE_EPOCH=$epoch "${offline[@]}" rpmbuild "${args[@]}"

arch=$(rpm --eval '%{_arch}')
nvr=drift-monitor-$version-$release$(rpm --eval '%{?dist}')
echo "build-rpm: $topdir/SRPMS/$nvr.src.rpm"
echo "build-rpm: $topdir/RPMS/$arch/$nvr.$arch.rpm"
