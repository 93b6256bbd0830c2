# locksim: `make run` runs every scenario and writes reports/; `make test` runs the tests.
#
# The simulation needs `--cfg madsim`. .cargo/config.toml sets it, but a RUSTFLAGS
# variable in the environment *replaces* that setting, so every cargo call here adds the
# flag to whatever RUSTFLAGS the environment brings.
export RUSTFLAGS := $(strip $(RUSTFLAGS) --cfg madsim)
export RUSTDOCFLAGS := $(strip $(RUSTDOCFLAGS) --cfg madsim)

CARGO ?= cargo
LOCKSIM := target/release/locksim

.PHONY: all build run test lint clean deps

all: build

build:
	$(CARGO) build --release --locked

# Every scenario, each with its own seed count; the table on stdout, reports in reports/.
run: build
	mkdir -p reports
	$(LOCKSIM) run scenarios/ --json reports/summary.jsonl | tee reports/summary.txt

# Unit, simulation and CLI-contract tests (the dev profile is opt-level 1).
test: deps
	$(CARGO) test --locked

# Tests start their own redis-server (Redis 7.0, Debian's package) on free ports.
deps:
	@command -v redis-server >/dev/null || { \
	  echo "installing redis-server"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server; }

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings

clean:
	$(CARGO) clean
