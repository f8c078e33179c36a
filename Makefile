# drift-monitor — the entry points. `make test` is exactly what CI runs.
GO        ?= go
BIN       := bin/drift-monitor
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.1.0)
LDFLAGS   := -X github.com/drift-monitor/drift-monitor/internal/cli.Version=$(VERSION)
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck

.PHONY: all build test check unit lint fuzz-seeds demo bench clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/drift-monitor

# test: formatting, vet, staticcheck, module verification, then every tier:
# unit tests (-race), the blackbox tier (built binary, private D-Bus), the
# conformance tier (real Ignition) and the systemd tier (real systemd in
# systemd-nspawn). With CI=true the privileged tiers fail instead of skipping.
test: lint build
	$(GO) test -race -count=1 ./...

check: test

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod verify
	@test -x $(STATICCHECK) || $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2
	$(STATICCHECK) ./...

unit:
	$(GO) test -race -count=1 ./internal/... ./cmd/...

demo: build
	./test/demo/demo.sh

bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...

clean:
	rm -rf bin _build
