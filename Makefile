# CCM Fleet build, test and lint entry points. `make test` is what CI runs.
GO        ?= go
BIN       ?= bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo development)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
# The build date: SOURCE_DATE_EPOCH when set (reproducible builds), else now.
DATE      ?= $(shell date -u -d "@$${SOURCE_DATE_EPOCH:-$$(date +%s)}" +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
# ccm-orch is the operators' client; ccm-broker (the embedded broker) and
# ccm-bench (the benchmark) link what it must not: ccm-orch broker and
# ccm-orch bench run them from beside it.
COMMANDS  := ccm-agent ccm-orch ccm-broker ccm-bench
STATICCHECK_VERSION := v0.8.2
SHELL     := /bin/bash

# make bench: BENCH_AGENTS=1000 limits the run to one fleet size (or a list,
# 100,1000); BENCH_ROUNDS sets the timed rounds per row; BENCH_FLAGS passes
# more ccm-bench flags (e.g. --rows noop,floor --profile-dir prof; the sites
# row: BENCH_AGENTS=20000 BENCH_FLAGS="--sites 4 --rows floor,floor-signed,noop,noop-sites").
BENCH_AGENTS ?=
BENCH_ROUNDS ?=
BENCH_FLAGS  ?=

.PHONY: all build package test vet lint deps demo lab bench bench-50k clean fuzz fuzz-smoke

# Fuzz targets, each PACKAGE:TARGET, run one at a time: briefly in make test
# (fuzz-smoke), for FUZZTIME each in make fuzz. A crasher is saved under the
# package's testdata/fuzz and replayed by every later go test.
FUZZ_TARGETS := ./protocol:FuzzDecodeFleetRequest ./protocol:FuzzDecodeFleetReply \
	./protocol:FuzzParseFilter ./protocol:FuzzParseSelect ./protocol:FuzzTokenRoundTrip \
	./resources/templates:FuzzRenderJet ./resources/templates:FuzzExpand \
	./resources/templates:FuzzSandboxGo ./providers/scaffoldchoria:FuzzScaffold
FUZZTIME     ?= 2m
SMOKE_FUZZTIME ?= 5s
# TEST_PARALLEL is how many test packages run at once. 4 on 2 cores
# finishes go test in about 620 s instead of about 850 s: the suites wait on
# processes, brokers and lab hosts as much as on the CPU. A lab host has a
# private copy of the machine's package state, taken at boot
# (internal/lab), so the lab specs may run beside the specs that run dpkg
# on this machine.
TEST_PARALLEL ?= 4

all: build

## build: compile the commands into ./bin
build:
	@mkdir -p $(BIN)
	@for c in $(COMMANDS); do \
		echo "go build $$c"; \
		CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/$$c ./cmd/$$c || exit 1; \
	done

## package: .deb and .rpm packages (ccm-fleet) for amd64 and arm64 in dist/out,
## built with nFPM by dist/packager (PACKAGE_ARCH=amd64 for one architecture)
PACKAGE_ARCH ?= amd64,arm64
package:
	$(GO) run ./dist/packager --out dist/out --arch $(PACKAGE_ARCH) \
		--version $(VERSION) --commit $(COMMIT) --date $(DATE)

## deps: install what the tests need (Go modules; Debian packages for the real package tests, rpm, rpmbuild, dnf and createrepo_c for the real rpm and dnf tests, chromium for the dashboard tests, python3-jsonschema for the offline schema tests, zsh and fish to check the completion scripts, curl for the lab's health checks), and download (not install) nginx for the lab hosts, which install it from the machine's apt cache
deps:
	$(GO) mod download
	@if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		missing=""; \
		for t in dpkg-deb:dpkg apt-get:apt systemd-analyze:systemd unshare:util-linux nsenter:util-linux curl:curl chromium:chromium rpm:rpm rpmbuild:rpm dnf:dnf createrepo_c:createrepo-c zsh:zsh fish:fish; do \
			command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t##*:}"; \
		done; \
		/usr/bin/python3 -c 'import jsonschema' >/dev/null 2>&1 || missing="$$missing python3-jsonschema"; \
		if [ -n "$$missing" ]; then \
			echo "installing Debian packages:$$missing"; \
			apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
		fi; \
		apt-cache policy nginx 2>/dev/null | grep -q 'Candidate: [0-9]' || apt-get update -q; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --download-only nginx >/dev/null; \
	fi

## demo: a broker, six simulated agents and an orchestrated change, drift and
## repair, then the dashboard until Ctrl-C; the broker and the dashboard take
## free loopback ports unless DEMO_PORT / DEMO_UI_PORT name them (a taken port
## fails at once); DEMO_NO_UI=1 skips the dashboard, DEMO_NO_WAIT=1 does not wait
demo: build
	@bash scripts/demo.sh

## lab: boot LAB_HOSTS lab hosts (default 4; real systemd as PID 1 in
## private namespaces, as root), install the project's .deb in each and start
## ccm-agent as its unit (the first LAB_WEB, default 2, get role=web), with a
## broker and a signing key; print the ccm-orch commands to try and tear it
## all down on Ctrl-C
LAB_HOSTS ?= 4
LAB_WEB   ?= 2
lab:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ccm-lab ./cmd/ccm-lab
	$(BIN)/ccm-lab --hosts $(LAB_HOSTS) --web $(LAB_WEB)

## bench: build, then measure fleet runs against the raw NATS floor with
## bin/ccm-bench (timing bin/ccm-orch and bin/ccm-agent beside it); prints a
## table and writes bench/results.json (never part of make test)
bench: build
	$(BIN)/ccm-bench --out bench/results.json $(if $(BENCH_AGENTS),--agents $(BENCH_AGENTS)) $(if $(BENCH_ROUNDS),--rounds $(BENCH_ROUNDS)) $(BENCH_FLAGS)

## bench-50k: 50,000 simulated agents (16 simulate processes, a cluster of
## 3 brokers) through every fleet row, 3 rounds each, the agents and floor
## responders niced below the brokers; writes bench/results-50k.json (about
## 28 minutes and 20.4 GiB of memory in use at peak on 2 cores; never part of
## make test)
bench-50k: build
	$(BIN)/ccm-bench run --agents 50000 --rounds 3 --nice 10 --registry-entries 0 \
		--rows floor,floor-signed,noop,noop-cli,change,change-cli,history-write,history-show,history-show-cli,agents,idle \
		--out bench/results-50k.json $(BENCH_FLAGS)

## vet: go vet over every package
vet:
	$(GO) vet ./...

## test: lint (gofmt, vet, staticcheck), then every suite with the race
## detector, then each fuzz target briefly (what CI runs)
test: deps lint
	$(GO) test -race -count=1 -p $(TEST_PARALLEL) -timeout 15m ./...
	@$(MAKE) --no-print-directory fuzz-smoke

## fuzz-smoke: each fuzz target for SMOKE_FUZZTIME (part of make test); a
## failure prints its whole output, and a run that ends with no failing input
## written (a fuzzing engine fault on a loaded machine) is tried once more
fuzz-smoke:
	@for pt in $(FUZZ_TARGETS); do \
		GO=$(GO) bash scripts/fuzz-smoke.sh "$${pt%%:*}" $(SMOKE_FUZZTIME) "$${pt#*:}" || exit 1; \
	done

## fuzz: each fuzz target for FUZZTIME (default 2m), one at a time
fuzz:
	@for pt in $(FUZZ_TARGETS); do \
		pkg="$${pt%%:*}"; t="$${pt#*:}"; \
		echo "go test -fuzz $$t -fuzztime $(FUZZTIME) $$pkg"; \
		$(GO) test -run XXX -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) "$$pkg" || exit 1; \
	done

## lint: formatting, vet and staticcheck
lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	$(GO) test -count=1 ./internal/codecheck -ginkgo.focus "tracked files"

clean:
	rm -rf $(BIN) dist/out
