# CCM Fleet build, test and lint entry points. `make test` is what CI runs.
GO        ?= go
BIN       ?= bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo development)
LDFLAGS   := -s -w -X main.version=$(VERSION)
COMMANDS  := ccm-agent ccm-orch
STATICCHECK_VERSION := v0.8.2

# make bench: BENCH_AGENTS=1000 limits the run to one fleet size (or a list,
# 100,1000); BENCH_ROUNDS sets the timed rounds per row; BENCH_FLAGS passes
# more ccm-orch bench flags (e.g. --rows noop,floor --profile-dir prof).
BENCH_AGENTS ?=
BENCH_ROUNDS ?=
BENCH_FLAGS  ?=

.PHONY: all build test vet lint deps demo bench clean

all: build

## build: compile the commands into ./bin
build:
	@mkdir -p $(BIN)
	@for c in $(COMMANDS); do \
		echo "go build $$c"; \
		CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/$$c ./cmd/$$c || exit 1; \
	done

## deps: install what the tests need (Go modules; Debian packages for the real package tests)
deps:
	$(GO) mod download
	@if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		missing=""; \
		for t in dpkg-deb:dpkg apt-get:apt; do \
			command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t##*:}"; \
		done; \
		if [ -n "$$missing" ]; then \
			echo "installing Debian packages:$$missing"; \
			apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
		fi; \
	fi

## demo: a broker, six simulated agents and an orchestrated change, drift and repair
demo: build
	@bash scripts/demo.sh

## bench: build, then measure fleet runs against the raw NATS floor; prints a
## table and writes bench/results.json (never part of make test)
bench: build
	$(BIN)/ccm-orch bench --out bench/results.json $(if $(BENCH_AGENTS),--agents $(BENCH_AGENTS)) $(if $(BENCH_ROUNDS),--rounds $(BENCH_ROUNDS)) $(BENCH_FLAGS)

## vet: go vet over every package
vet:
	$(GO) vet ./...

## test: vet, then every suite with the race detector (what CI runs)
test: deps vet
	$(GO) test -race -count=1 -timeout 15m ./...

## lint: formatting, vet and staticcheck
lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

clean:
	rm -rf $(BIN)
