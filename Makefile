# drift-monitor — the entry points. `make test` is exactly what CI runs.
GO        ?= go
BIN       := bin/drift-monitor
VERSION   ?= $(shell cat VERSION)$(shell git rev-parse --short HEAD 2>/dev/null | sed "s/^/+git/")
LDFLAGS   := -X github.com/drift-monitor/drift-monitor/internal/cli.Version=$(VERSION)
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck

.PHONY: all build test check unit lint fuzz demo bench clean

all: build

# build: the release binary (tools/release-goenv.sh says why it is built in
# an environment of its own; cmd/drift-monitor/depaware.txt lists what it
# links).
build:
	goenv=$$(./tools/release-goenv.sh) && env $$goenv $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/drift-monitor

# test: formatting, vet, staticcheck, module verification, then every tier:
# unit tests (-race), the blackbox tier (built binary, private D-Bus), the
# conformance tier (real Ignition), the systemd tier (real systemd in
# systemd-nspawn), the demo (test/demo, make demo's story as a test) and
# the Prometheus tier (test/prometheus: promtool on the
# shipped rules, and the daemon's textfile through real node_exporter,
# Prometheus and Alertmanager to a webhook). With CI=true the privileged
# tiers fail instead of skipping. -timeout: a package's whole run (the
# systemd tier takes minutes on a loaded machine), beyond go test's 10m.
test: lint build
	$(GO) test -race -count=1 -timeout 20m ./...

check: test

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod verify
	@test -x $(STATICCHECK) || $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2
	$(STATICCHECK) ./...

unit:
	$(GO) test -race -count=1 ./internal/... ./cmd/...

# fuzz: run every fuzz target (func FuzzX in a _test.go file) for FUZZTIME
# each, one after the other (go test fuzzes one target at a time); a failing
# input is written under the package's testdata/fuzz and fails the target.
# `make test` runs only their seed corpora. Run it at every Ignition bump
# (internal/ignspec).
FUZZTIME ?= 20s
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' internal cmd test 2>/dev/null | sort); do \
		pkg=./$$(dirname $$f); \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "fuzz $$pkg $$t ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

# demo: TestDemo (test/demo) telling its story; `make test` runs it as a test.
demo:
	GO='$(GO)' ./test/demo/demo.sh

# bench: measure drift-monitor against its targets and write docs/benchmarks.md
# (with docs/benchmarks-micro.txt, the raw `go test -bench` output for
# benchstat): a full check against AIDE and cat, detection latency with the
# daemon running against the naive strategy, the cost of waiting, the Go
# micro-benchmarks, the daemon's memory through repeated storms of
# changes (part 5), the comparison with the OS image's /etc against
# ostree admin config-diff and rpm -Va (part 6), --attribution=audit under a
# write storm (part 7: it changes the kernel's audit state, under the audit
# tests' lock), and SELinux-labelled hosts against plain ones (part 8:
# setfiles and selinux-policy-default). Needs root, aide, ostree, rpmbuild,
# auditctl and ~2.5 GiB under /var/tmp; takes over an hour. BENCH_QUICK=1:
# smaller N and fewer runs, a few minutes, written
# to _build/benchmarks-quick.md. BENCH_ARGS passes more flags (e.g. -parts 2).
# `make test` never runs these: bench/ has no tests, the Go benchmarks only
# run with -bench.
BENCHSTAT := $(shell $(GO) env GOPATH)/bin/benchstat
bench: build
	@test -x $(BENCHSTAT) || $(GO) install golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
	$(GO) build -o bin/drift-bench ./bench
	./bin/drift-bench -bin $(BIN) -benchstat $(BENCHSTAT) $(if $(filter 1,$(BENCH_QUICK)),-quick) $(BENCH_ARGS) \
		-invoked '$(if $(filter 1,$(BENCH_QUICK)),BENCH_QUICK=1 )make bench$(if $(BENCH_ARGS), BENCH_ARGS="$(BENCH_ARGS)")'

clean:
	rm -rf bin _build

# rpm: the source tarball (the tree plus vendored Go modules), the SRPM and
# the binary RPM, built offline with rpmbuild into $(RPM_TOPDIR) (see
# packaging/build-rpm.sh). RELEASE=N builds release N of the same version,
# which rpm -U takes as an upgrade; RPMBUILD_FLAGS='--without check' skips
# the unit tests in %check.
RELEASE        ?= 1
RPM_TOPDIR     ?= _build/rpm
RPMBUILD_FLAGS ?=
.PHONY: rpm man
rpm:
	RELEASE='$(RELEASE)' RPM_TOPDIR='$(RPM_TOPDIR)' RPMBUILD_FLAGS='$(RPMBUILD_FLAGS)' ./packaging/build-rpm.sh

# man: regenerate what comes from internal/journal.Catalog (the journal
# message catalog and the man page's MESSAGE_ID list), check the man page
# with groff's warnings on, and render it to _build/man/ (man -l to read it).
man:
	$(GO) run ./tools/gencatalog
	@out=$$(groff -man -ww -z packaging/drift-monitor.8 2>&1); if [ -n "$$out" ]; then echo "$$out"; exit 1; fi
	@mkdir -p _build/man
	gzip -9nc packaging/drift-monitor.8 >_build/man/drift-monitor.8.gz
	groff -man -Tutf8 -P-cbou packaging/drift-monitor.8 >_build/man/drift-monitor.8.txt
