# dualforce: build, test and run. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
PKGS := ./...
# Debian packages the project's tests and tools need (MuJoCo, OpenBLAS, a real MQTT broker and
# clients, socat for serial tests, iproute2 for network namespaces, numpy for interop checks).
APT_PACKAGES := libmujoco-dev libopenblas-dev mosquitto mosquitto-clients socat iproute2 python3-numpy
# For the on-robot deployment checks (qemu-user runs the linux/arm64 skillrt, systemd-analyze
# verifies its unit) and the evaluation report's browser check (chromium renders the page
# headless), installed when possible: without them those tests skip and say why.
OPTIONAL_APT_PACKAGES := qemu-user-static systemd chromium
# PyTorch (CPU) only for the side-by-side training benchmark: make bench installs it.
BENCH_APT_PACKAGES := python3-torch
STATICCHECK_VERSION := v0.7.0
GOBIN := $(shell $(GO) env GOPATH)/bin
# Fuzz budgets are execution counts, not durations: Go 1.26's fuzz coordinator races its own
# -fuzztime deadline and can fail a clean run with "context deadline exceeded" on a loaded machine
# (golang/go#75804). FUZZ_EXECS is the default count; FUZZ_BUDGETS sizes the slow targets (about
# 10 s each on two busy cores). FUZZTIME (e.g. 1m) overrides every budget with a duration.
FUZZ_EXECS ?= 50000x
FUZZ_BUDGETS := FuzzBankManifest=5000x FuzzDecodeCheckpoint=5000x FuzzLogReaders=5000x
FUZZTIME ?=
BENCHTIME ?= 1s
TEST_TIMEOUT ?= 20m

.PHONY: help setup build test run banks bench fuzz lint clean

help: ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 10

setup: ## install missing apt packages and Go tools (idempotent; needs root for apt)
	@missing=""; for p in $(APT_PACKAGES) $(EXTRA_APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "setup: installing$$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "setup: need root to apt-get install$$missing" >&2; exit 1; fi; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
	@missing=""; for p in $(OPTIONAL_APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "setup: installing$$missing (optional)"; \
		{ [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; } || \
			echo "setup: could not install$$missing: the arm64 replay and systemd unit tests will skip" >&2; \
	fi
	@test -x $(GOBIN)/staticcheck || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	@$(GO) mod download

build: ## build every binary into bin/
	@mkdir -p bin
	$(GO) build -o bin/ ./cmd/...

# Packages whose tests run 1 kHz loops in real time (hardware-in-the-loop, MQTT outages): they
# run one at a time after the rest, so the suite does not starve its own control loops.
REALTIME_PKGS := ./hw/host ./hw/board/server ./sim/robotboard ./runtime/app ./runtime/mqtt \
	./cmd/skillrt ./cmd/linkcheck ./cmd/solo12sim

test: setup ## vet and run every test, including the privileged hardware-in-the-loop ones
	$(GO) vet $(PKGS)
	$(GO) test -timeout $(TEST_TIMEOUT) -count=1 $$($(GO) list $(PKGS) | grep -vxF "$$($(GO) list $(REALTIME_PKGS))")
	$(GO) test -timeout $(TEST_TIMEOUT) -count=1 -p 1 $(REALTIME_PKGS)

RUN_SECONDS ?= 0
RUN_WORLD ?= flat
# The trained skill bank `make run` runs: the shipped Dual-Force bank of the world's task
# (banks/, rebuilt from scratch by `make banks`), unless RUN_BANK names another.
RUN_TASK := $(if $(filter obstacle%,$(RUN_WORLD)),navigation,locomotion)
RUN_BANK ?= banks/$(RUN_TASK).npz

# RUN_KEEP_AWAKE=0 lets the CPUs idle. By default `skillrt keep-awake` spins on them below every
# other thread: on a virtual machine an idle CPU wakes up late and the 1 kHz loop misses
# periods (measured: 2357 missed and 358 overruns in 25 s without it, 57 and 1 with it).
RUN_KEEP_AWAKE ?= 1

# The runtime starts first and calls the board until the simulator answers (it gives up after
# 2.5 s), so that the simulated robot, which powers on standing with its motors off, is enabled
# as it powers on, the way the skills were collected and evaluated. Started the other way round
# the robot lay on the ground for 1.5 s before the runtime stood it up, and the shipped
# navigation bank got stuck at the box (`dualforce eval --host-delay`, docs/results.md). A
# Ctrl-C interrupts the shell's wait for it: the loop waits on until it has stopped, for its status.
run: setup build ## the main job: simulated Solo12 + the runtime running a shipped skill bank (Ctrl-C stops)
	@echo "make run: simulated Solo12 ($(RUN_WORLD)) <-UDP tunnel-> skillrt ($(RUN_BANK)); MQTT on 127.0.0.1:1883 (bin/skillrt op --robot solo-sim watch), metrics on 127.0.0.1:9102"
	@if [ "$(RUN_KEEP_AWAKE)" != 0 ]; then bin/skillrt keep-awake & awake=$$!; fi; \
	if [ "$(RUN_SECONDS)" != 0 ]; then limit="timeout --signal=INT --kill-after=5 $(RUN_SECONDS)"; fi; \
	$$limit bin/skillrt run --config cmd/skillrt/sim.yaml --bank $(RUN_BANK) --auto-run & rt=$$!; \
	trap 'kill $$sim $$awake 2>/dev/null; wait $$sim $$awake 2>/dev/null' EXIT INT TERM; \
	sleep 0.5; \
	bin/solo12sim --transport udp --listen 127.0.0.1:9750 --perception-addr 127.0.0.1:9751 --world $(RUN_WORLD) --jitter=false --stats 0 & sim=$$!; \
	wait $$rt; st=$$?; while kill -0 $$rt 2>/dev/null; do wait $$rt; st=$$?; done; \
	[ $$st = 0 ] || [ $$st = 124 ]

# BANK_TASKS rebuilds only some of them (e.g. BANK_TASKS=locomotion); see banks/build.sh for
# the steps and the sizes, and out/banks/<task> for the runs, their plots and eval.json.
BANK_TASKS ?= locomotion navigation
banks: setup build ## rebuild the shipped skill banks from scratch (data, SMODICE, FRE, Dual-Force, eval)
	@for task in $(BANK_TASKS); do banks/build.sh $$task || exit 1; done

bench: ## run every benchmark with allocation counts, and the runtime's 60 s real-time run
	@$(MAKE) --no-print-directory setup EXTRA_APT_PACKAGES="$(BENCH_APT_PACKAGES)"
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(PKGS)
	DUALFORCE_REALTIME_SECONDS=60 $(GO) test -count=1 -run TestRuntimeRealtimeOverEthernet -v ./cmd/skillrt | grep -E 'hil_test|^(ok|FAIL|---)' 

fuzz: ## a short run of every fuzz target (FUZZ_EXECS executions each, or FUZZTIME)
	@failed=""; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' .); do \
		dir=$$(dirname $$f); \
		for t in $$(grep -oE '^func Fuzz[A-Za-z0-9_]+' $$f | sed 's/^func //'); do \
			budget=$(FUZZ_EXECS); \
			for kv in $(FUZZ_BUDGETS); do [ "$${kv%%=*}" = "$$t" ] && budget=$${kv#*=}; done; \
			[ -n "$(FUZZTIME)" ] && budget=$(FUZZTIME); \
			corpus=$$dir/testdata/fuzz/$$t; \
			before=$$(ls $$corpus 2>/dev/null | wc -l); \
			start=$$(date +%s.%N); \
			out=$$($(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $$budget $$dir 2>&1); code=$$?; \
			secs=$$(awk "BEGIN { print $$(date +%s.%N) - $$start }"); \
			rate=$$(echo "$$out" | grep -oE 'execs: [0-9]+ \([0-9]+/sec\)' | tail -1); \
			after=$$(ls $$corpus 2>/dev/null | wc -l); \
			if [ $$code -eq 0 ]; then \
				printf 'fuzz %-22s %-28s ok   %s in %.1fs (%s)\n' $$dir $$t $$budget $$secs "$${rate:-under 3 s, no rate line}"; \
			elif [ $$after -gt $$before ]; then \
				echo "$$out"; echo "fuzz $$dir $$t FAILED: reproducer written to $$corpus"; failed="$$failed $$t"; \
			else \
				echo "$$out" | tail -3; \
				echo "fuzz $$dir $$t: go test failed without writing a reproducer (the coordinator's deadline race, golang/go#75804): not counted"; \
			fi; \
		done; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: failing inputs in:$$failed"; exit 1; fi

lint: setup ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GOBIN)/staticcheck $(PKGS)

clean: ## remove build outputs (binaries, bank-building runs, recordings)
	rm -rf bin out
