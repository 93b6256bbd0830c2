# locksim: `make run` runs every scenario and writes reports/; `make test` runs the tests.
#
# The simulation needs `--cfg madsim`. .cargo/config.toml sets it, but a RUSTFLAGS
# variable in the environment *replaces* that setting, so every cargo call here adds the
# flag to whatever RUSTFLAGS the environment brings.
export RUSTFLAGS := $(strip $(RUSTFLAGS) --cfg madsim)
export RUSTDOCFLAGS := $(strip $(RUSTDOCFLAGS) --cfg madsim)

CARGO ?= cargo
LOCKSIM := target/release/locksim

.PHONY: all build install pgo-profile pgo-check bolt-check run test test-live soak lint doc clean deps images install-check redis-tcl redis-src

all: build

# The release binary (`make run`, `bench`, the images) aligns every function to a 64-byte
# cache line: a seed's hot code is larger than the instruction cache, and a small function
# that starts mid-line takes two lines. Cachegrind's misses fell 9% an event, estimated
# cycles 1.5-2.4%, wall medians 2-3% (docs/performance.md, thirteenth pass). Only here: the
# dev profile of `make test` and the README's `cargo install` keep their own flags, so
# that the install after `make test` still reuses every unit it built. It keeps its
# relocations (--emit-relocs) for BOLT, which lays it out anew after linking (`make build`
# below).
RELEASE_BASE_RUSTFLAGS := $(RUSTFLAGS) -C llvm-args=-align-all-functions=6 -C link-arg=-Wl,--emit-relocs

# And it is optimised with a profile of what users run (pgo/locksim.profdata.gz, written
# by `make pgo-profile`): a third fewer instruction-cache misses an event, estimated
# cycles -17 to -18%, wall time 0.83 of the build without it on the benches and ~0.8 on
# `make run`'s report, digests the same (docs/performance.md, fourteenth pass). An LLVM
# older than the one that wrote the profile cannot read it: the build then goes on
# without it, and says so. A profile older than the code is safe: changed functions lose
# theirs, silently (without -no-pgo-warn-mismatch rustc would print a warning for each;
# `make pgo-check` counts what they held).
PGO_LLVM := $(shell cat pgo/llvm-version 2>/dev/null)
RUSTC_LLVM := $(shell rustc -vV 2>/dev/null | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
PGO_USABLE := $(shell [ -n "$(PGO_LLVM)" ] && [ -n "$(RUSTC_LLVM)" ] && [ "$(RUSTC_LLVM)" -ge "$(PGO_LLVM)" ] && echo yes)
PGO_DATA := target/pgo/locksim.profdata
PGO_USE := -C profile-use=$(CURDIR)/$(PGO_DATA)
PGO_UNREADABLE := pgo/locksim.profdata.gz was written by LLVM $(PGO_LLVM), rustc has LLVM $(RUSTC_LLVM)
ifeq ($(PGO_USABLE),yes)
RELEASE_RUSTFLAGS := $(RELEASE_BASE_RUSTFLAGS) $(PGO_USE) -C llvm-args=-no-pgo-warn-mismatch
PGO_INPUT := $(PGO_DATA)
else
RELEASE_RUSTFLAGS := $(RELEASE_BASE_RUSTFLAGS)
PGO_INPUT :=
endif

build: $(PGO_INPUT)
ifneq ($(PGO_USABLE),yes)
	@echo "note: building without the profile ($(PGO_UNREADABLE)): slower"
endif
	RUSTFLAGS="$(RELEASE_RUSTFLAGS)" $(CARGO) build --release --locked
	scripts/bolt.sh $(LOCKSIM)

$(PGO_DATA): pgo/locksim.profdata.gz
	mkdir -p $(@D)
	gzip -dc $< > $@.tmp && mv $@.tmp $@

# `make build`'s binary installed where cargo installs (~/.cargo/bin, or
# $CARGO_INSTALL_ROOT/bin), from this checkout: the README's `cargo install` line builds
# without the profile and the alignment, and its binary is the slower one. A path install
# builds in this target directory, so after `make build` it only copies the binary, and
# the layout BOLT made for that binary is copied over it (and over `make build`'s, which
# cargo has put back as linked).
INSTALLED := $(or $(CARGO_INSTALL_ROOT),$(CARGO_HOME),$(HOME)/.cargo)/bin/locksim
install: $(PGO_INPUT)
	RUSTFLAGS="$(RELEASE_RUSTFLAGS)" $(CARGO) install --locked --path .
	scripts/bolt.sh $(INSTALLED)
	scripts/bolt.sh $(LOCKSIM)

# Profiles the release build anew (scripts/pgo-profile.sh): after a change to a hot path.
pgo-profile:
	RELEASE_BASE_RUSTFLAGS="$(RELEASE_BASE_RUSTFLAGS)" RUSTC_LLVM="$(RUSTC_LLVM)" scripts/pgo-profile.sh

# How much of the profile the code has left behind (scripts/pgo-check.sh): fails when more
# than PGO_STALE_LIMIT percent (default 5) of its counts sit in functions changed since.
pgo-check: $(PGO_INPUT)
ifeq ($(PGO_USABLE),yes)
	PGO_CHECK_FLAGS="$(RELEASE_BASE_RUSTFLAGS) $(PGO_USE) -C llvm-args=-pgo-warn-missing-function" \
	  PGO_DATA="$(CURDIR)/$(PGO_DATA)" scripts/pgo-check.sh
else
	@echo "note: no profile check: $(PGO_UNREADABLE)"
endif

# BOLT's layout of pgo-check's binary (the release build's code: only the profile's
# warnings differ), which must give the same seed logs and verdict table as the binary
# as linked; it fails where llvm-bolt cannot be found or installed (scripts/bolt.sh).
bolt-check: pgo-check
ifeq ($(PGO_USABLE),yes)
	BOLT_REQUIRED=1 scripts/bolt.sh target/pgo-check/target/release/locksim
else
	@echo "note: no layout check: pgo-check built no binary ($(PGO_UNREADABLE))"
endif

# Every scenario, each with its own seed count: the verdict table on stdout (and in
# reports/summary.txt), the safety report in reports/ (index.html, summary.json).
run: build
	mkdir -p reports
	$(LOCKSIM) report scenarios/ --out reports | tee reports/summary.txt

# The README's pictures (docs/images/), drawn by locksim itself, never by hand: the safety
# matrix and the pause x delay envelope at the report's seed counts, and the lease timeline
# of one counterexample.
images: build
	mkdir -p docs/images target/images
	$(LOCKSIM) report scenarios/single-node-baseline.json --seeds 1 --out target/images > /dev/null
	cp target/images/figures/matrix.png docs/images/matrix.png
	cp target/images/figures/envelope-pause-delay.png docs/images/envelope-pause-delay.png
	$(LOCKSIM) replay scenarios/redlock-gc-pause.json --seed 0 --plot docs/images/timeline-redlock-gc-pause.png > /dev/null

# Unit, simulation and CLI-contract tests (the dev profile: opt-level 1, line tables only),
# with cargo-nextest where the machine has it (.config/nextest.toml: every binary's tests
# from one pool, live tests alone), then the doc test; `cargo test` where it has not.
test: deps
	@if $(CARGO) nextest --version >/dev/null 2>&1; then \
	  set -e; $(CARGO) nextest run --locked --no-fail-fast; $(CARGO) test --locked --doc; \
	else \
	  echo "cargo-nextest not found: cargo test runs the test binaries one after another"; \
	  $(CARGO) test --locked; \
	fi

# Live mode end to end (real processes in real time): locksim's worker and the shipped
# library workers (examples/workers/: redis-py, pottery, python-redis-lock, node-redlock,
# redis-semaphore; pip and npm install the pinned libraries the first time) under a pause,
# with fencing and without faults, on locksim's nodes; failover before replication with and
# without WAIT on both node kinds; clock jumps on redis-server through
# the wall-clock shim; a live seed striking the nodes its simulated seed strikes, and
# overlapping faults composing live as simulated. About a minute and a half on 2 cores;
# `make test` runs them too.
# Then the simulator checked against the real thing (docs/real-vs-sim.md): every scenario
# of its table simulated, live on locksim's nodes and live on redis-server, the verdicts
# compared, 2 live seeds each (about 35 minutes of real time; `make test` runs a short subset).
test-live: deps
	$(CARGO) test --locked --test live
	$(CARGO) test --locked --test live -- --ignored --nocapture real_vs_sim::

# The long sweeps (not in CI, which runs them small): the safe baseline of every topology
# over 20,000 seeds each with no violation, and 10,000+ catalogue seeds giving the same
# digests twice and on 1, 2 and 3 threads. About half an hour on 2 cores.
soak: deps
	LOCKSIM_SOAK=1 $(CARGO) test --release --locked --test soak -- --nocapture

# Redis's own Tcl suite against `locksim serve` (scripts/redis-tcl-suite.sh): counts of
# passed, failed and skipped test cases, unit/scripting by default. Needs Redis 7.0's sources
# (git clone --branch 7.0.15 https://github.com/redis/redis) and tclsh; not part of `make
# test`, since CI has no Redis sources. `make redis-tcl REDIS_SRC=../redis UNITS="unit/x"`.
UNITS ?= unit/scripting
redis-tcl: redis-src build
	scripts/redis-tcl-suite.sh $(REDIS_SRC) $(UNITS)

# Says how to call `make redis-tcl` before anything is built.
redis-src:
	@test -n "$(REDIS_SRC)" || { echo "usage: make redis-tcl REDIS_SRC=/path/to/redis-7.0.15"; exit 2; }

# The README's install line (`cargo install` with `--cfg madsim`), run from outside the
# repository into a temporary root, then the installed binary (tests/install.rs). A debug
# build into the target directory `make test` used, so after `make test` it reuses every
# unit (Cargo.toml turns on in [dependencies] the features the dev-dependencies would
# widen) and only links the binary: about 30 s; alone, a build of everything (minutes). Not part of `make test`; CI runs it after.
install-check:
	$(CARGO) test --locked --test install -- --ignored

# Tests start their own redis-server (Redis 7.0, Debian's package) on free ports, and
# open the report in headless Chromium (Debian's package).
deps:
	@command -v redis-server >/dev/null && command -v chromium >/dev/null || { \
	  echo "installing redis-server and chromium"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    redis-server chromium fonts-dejavu-core; }

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings

# The library's documentation for the people who work on it, private items included
# (target/doc/locksim/index.html); a broken link fails it.
doc:
	RUSTDOCFLAGS="$(RUSTDOCFLAGS) -D warnings" $(CARGO) doc --no-deps --locked --document-private-items

clean:
	$(CARGO) clean
