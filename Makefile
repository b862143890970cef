# wharf: make help lists the targets.
.DEFAULT_GOAL := help
SHELL := /bin/bash

GO        ?= go
GOBIN     := $(shell $(GO) env GOPATH)/bin
MINIO     := $(GOBIN)/minio
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
COSIGN    := $(GOBIN)/cosign
COSIGN_VERSION := v2.6.5
CRANE     := $(GOBIN)/crane
CRANE_VERSION := v0.22.1
GETH      := $(GOBIN)/geth
GETH_VERSION := v1.17.8
# op-geth (Optimism's go-ethereum), pinned in tools/opgeth/go.mod: its go.mod
# names the module github.com/ethereum/go-ethereum, so it is built through
# that tools module's replace, under a name that never shadows geth.
OPGETH    := $(GOBIN)/op-geth
BTCD      := $(GOBIN)/btcd
BTCD_VERSION := v0.26.2
STATICCHECK_VERSION := v0.8.2
ACTIONLINT_VERSION := v1.7.12
NETLIFY   := tools/netlify/node_modules/.package-lock.json
# anvil (Foundry's EVM node), pinned in tools/anvil/package-lock.json.
ANVIL     := tools/anvil/node_modules/.package-lock.json
TESTFLAGS ?= -race -count=1 -timeout 20m
# @redocly/cli, pinned in tools/redocly/package-lock.json (npm ci installs it).
REDOCLY   := tools/redocly/node_modules/.bin/redocly

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

# What --version prints and build_info reports, recorded at link time from
# git: the tag (or "(devel)"), the commit, its time and whether the work
# tree was modified. Outside a git checkout they stay empty and the
# binaries fall back on what Go recorded itself (-buildvcs).
BUILDINFO := github.com/wharfhq/wharf/internal/buildinfo
GIT_TAG   := $(shell git describe --tags --exact-match 2>/dev/null)
GIT_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
GIT_TIME  := $(shell git show -s --format=%cI HEAD 2>/dev/null)
GIT_MODIFIED := $(if $(GIT_COMMIT),$(if $(shell git status --porcelain --untracked-files=no 2>/dev/null),true,false))
LDFLAGS   := -X $(BUILDINFO).linkedVersion=$(GIT_TAG) -X $(BUILDINFO).linkedCommit=$(GIT_COMMIT) \
             -X $(BUILDINFO).linkedTime=$(GIT_TIME) -X $(BUILDINFO).linkedModified=$(GIT_MODIFIED)

# TAGS=kms builds wharf with the cloud KMS providers (publish/kms) for
# --key awskms://, gcpkms://, azurekms://, hashivault://; without them a
# first build downloads and compiles about a third less (README).
TAGS ?=

.PHONY: build
build: ## build wharf and addrd into ./bin (TAGS=kms: wharf with the cloud KMS providers)
	@if [ -x bin/wharf ] && [ -x bin/addrd ]; then v=; else v=-v; \
	  echo "make build: the first build of bin/wharf and bin/addrd downloads about 250 MB of Go modules and compiles about 860 packages:"; \
	  echo "make build: 5 to 30 minutes on two cores (later builds take seconds; README: The first build). Each package is listed as it compiles."; \
	fi; \
	$(GO) build $$v -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

.PHONY: ldflags
ldflags: # print the -ldflags of build (internal/buildinfo's test uses them)
	@echo '$(LDFLAGS)'

.PHONY: run
run: ## publish a demo release into ./public and serve it (wharf on :8080, addrd --dev on :8090; ports taken? WHARF_LISTEN=127.0.0.1:8081 ADDRD_LISTEN=127.0.0.1:8091 make run, WHARF_BASE_URL for the page's links)
	./scripts/run.sh

# The skip report make test sums up (internal/testenv appends to it).
SKIPS     := $(CURDIR)/.skipped-tests

.PHONY: test
test: minio cosign crane geth op-geth btcd $(if $(shell command -v npm 2>/dev/null),netlify anvil) ## run all tests; the first run builds the pinned MinIO, cosign, crane, geth, op-geth and btcd (slow: ~20 min), the end lists what skipped and the apt command that installs it
	@rm -f $(SKIPS)
	@flags='$(TESTFLAGS)'; \
	  if [[ $$flags == *-race* ]] && ! command -v "$${CC:-gcc}" >/dev/null && ! command -v cc >/dev/null; then \
	    echo "make test: no C compiler, so no -race (sudo apt-get install -y gcc adds it)"; flags=$${flags//-race/}; \
	  fi; \
	  rc=0; WHARF_SKIP_REPORT=$(SKIPS) PATH="$(GOBIN):$$PATH" $(GO) test $$flags ./... || rc=$$?; \
	  WHARF_SKIP_REPORT=$(SKIPS) PATH="$(GOBIN):$$PATH" $(GO) test $$flags -tags kms -run KMS ./cmd/wharf || rc=$$?; \
	  ./scripts/skipped.sh $(SKIPS); rm -f $(SKIPS); exit $$rc

.PHONY: lint
lint: netlify $(REDOCLY) ## gofmt, go vet, staticcheck, actionlint (the workflows; their scripts through shellcheck), _redirects through Netlify's parser, the OpenAPI document through redocly
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags kms ./cmd/wharf
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	$(GO) run github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION) .github/workflows/*.yml
	@out=$$(node tools/netlify/check.mjs publish/testdata/TestPublishRedirects.golden </dev/null); \
	  if ! grep -q '"errors":\[\]' <<<"$$out"; then echo "_redirects: $$out"; exit 1; fi
	$(REDOCLY) lint --config tools/redocly/redocly.yaml query/api/openapi.yaml

$(REDOCLY): tools/redocly/package.json tools/redocly/package-lock.json
	npm ci --prefix tools/redocly --no-audit --no-fund
	touch $@

.PHONY: soak
soak: geth op-geth anvil btcd ## the adversarial chains of query/evm/adversary over SEEDS seeds (default 200; a tenth of them each on geth --dev, on op-geth with deposits and L1 fee changes, and on anvil), every violation a failure; a failure names its seed (rerun: ADDRD_ADVERSARY_SEED=N); then query/utxo/adversary's random regtest activity on btcd and litecoind, UTXO_SEEDS seeds (default 20) of UTXO_STEPS steps (default 60) each, held to the node through the reader and through the fetcher's statements (rerun: ADDRD_UTXO_SEED=N); then HOSTILE_TOKENS hostile tokens (default 120) on each chain and database, and a token answering 1 MB minted HOSTILE_MINTS times (default 240) on each database; then LIES lies of the lying node (default 60) on each database; then the slow-client generator for SLOW_SECONDS (default 60) on each database
	ADDRD_ADVERSARY_SEEDS=$(or $(SEEDS),200) ADDRD_ADVERSARY_STRICT=1 PATH="$(GOBIN):$$PATH" $(GO) test -count=1 -timeout 3h -run 'TestAdversarial' -v ./query/evm/adversary/ | grep -E '^(=== RUN|--- FAIL|FAIL|ok|PASS)|violations|adversary_test'
	ADDRD_UTXO_SEEDS=$(or $(UTXO_SEEDS),20) ADDRD_UTXO_STEPS=$(or $(UTXO_STEPS),60) PATH="$(GOBIN):$$PATH" $(GO) test -count=1 -timeout 3h -run 'TestAdversarial|TestFetcherAdversarial' -v ./query/utxo/adversary/ | grep -E '^(=== RUN|--- FAIL|FAIL|ok|PASS)|violations|adversary_test|fetch_test'
	ADDRD_HOSTILE_TOKENS=$(or $(HOSTILE_TOKENS),120) ADDRD_HOSTILE_MINTS=$(or $(HOSTILE_MINTS),240) PATH="$(GOBIN):$$PATH" $(GO) test -count=1 -timeout 1h -run 'TestHostileToken' -v ./query/evm/adversary/ | grep -E '^(=== RUN|--- FAIL|FAIL|ok|PASS)|violations|hostile_test|hostile_storage_test'
	WHARF_LIAR_ROUNDS=$(or $(LIES),60) PATH="$(GOBIN):$$PATH" $(GO) test -count=1 -timeout 1h -run 'TestLyingNode' -v ./query/fetch/ | grep -E '^(=== RUN|--- FAIL|FAIL|ok|PASS)|liar_test'
	WHARF_SLOW_SECONDS=$(or $(SLOW_SECONDS),60) $(GO) test -count=1 -timeout 1h -run 'TestSlowClients' -v ./cmd/addrd/ | grep -E '^(=== RUN|--- FAIL|FAIL|ok|PASS)|slowclient_test'

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each (default 30s), then the hosting differential suite with HOSTING_VARIANTS variants per proxy (default 20000; a quarter as many sequences), the signing contexts over SIGN_ROUNDS rounds (2000) and the install script generator over INSTALL_CASES cases (300), each with a random seed; a failure leaves its input under testdata/fuzz or prints its seed
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; \
	    $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done
	@echo "== hosting differential suite, $(HOSTING_VARIANTS) variants per proxy"
	WHARF_HOSTING_VARIANTS=$(HOSTING_VARIANTS) PATH="$(GOBIN):$$PATH" $(GO) test -count=1 -timeout 60m -v \
	  -run '^(TestHostingDifferential|TestHostingSequences|TestHostingS3Policy)$$' ./cmd/wharf | grep -E '^(---|ok|FAIL|PASS)|variants|trials|violation|seed'
	@echo "== signing contexts ($(SIGN_ROUNDS) rounds of every pair of kinds) and the install script generator ($(INSTALL_CASES) cases)"
	WHARF_FUZZ_ROUNDS=$(SIGN_ROUNDS) $(GO) test -count=1 -run '^TestNoSignatureCrossesKinds$$' -v ./publish | grep -E '^(---|ok|FAIL|PASS)|attempts|seed'
	WHARF_INSTALL_CASES=$(INSTALL_CASES) $(GO) test -count=1 -timeout 60m -run '^TestInstallScriptGenerated$$' -v ./site | grep -E '^(---|ok|FAIL|PASS)|cases|violation|seed'
FUZZTIME ?= 30s
HOSTING_VARIANTS ?= 20000
SIGN_ROUNDS ?= 2000
INSTALL_CASES ?= 300

.PHONY: bench
bench: build $(MINIO) ## benchmarks, each reported as a ratio against a reference in the same run
	./scripts/bench.sh

.PHONY: minio
minio: $(MINIO) ## build the pinned MinIO server the tests use (cold: ~10 min)
$(MINIO):
	@echo "make: building the pinned MinIO server into $(GOBIN) (first run only: ~10 minutes)"
	$(GO) install github.com/minio/minio@$(MINIO_VERSION)

.PHONY: cosign
cosign: $(COSIGN) ## build the pinned cosign the signature tests verify with (cold: ~5 min)
$(COSIGN):
	@echo "make: building the pinned cosign into $(GOBIN) (first run only: ~5 minutes)"
	$(GO) install github.com/sigstore/cosign/v2/cmd/cosign@$(COSIGN_VERSION)

.PHONY: crane
crane: $(CRANE) ## build the pinned crane the registry tests pull with (cold: ~1 min)
$(CRANE):
	@echo "make: building the pinned crane into $(GOBIN) (first run only: ~1 minute)"
	$(GO) install github.com/google/go-containerregistry/cmd/crane@$(CRANE_VERSION)

.PHONY: geth
geth: $(GETH) ## build the pinned geth the addrd tests run as a real --dev node (cold: ~5 min)
$(GETH):
	@echo "make: building the pinned geth into $(GOBIN) (first run only: ~5 minutes)"
	$(GO) install github.com/ethereum/go-ethereum/cmd/geth@$(GETH_VERSION)

.PHONY: op-geth
op-geth: $(OPGETH) ## build the pinned op-geth (v1.101702.3, tools/opgeth) the addrd tests run as a real OP-stack node (cold: ~4 min)
$(OPGETH):
	@echo "make: building the pinned op-geth into $(GOBIN) (first run only: ~4 minutes)"
	cd tools/opgeth && $(GO) build -trimpath -o $(OPGETH) github.com/ethereum/go-ethereum/cmd/geth

.PHONY: btcd
btcd: $(BTCD) ## build the pinned btcd and btcctl the addrd tests run as a real Bitcoin regtest node (cold: ~70 s)
$(BTCD):
	@echo "make: building the pinned btcd and btcctl into $(GOBIN) (first run only: ~70 seconds)"
	$(GO) install github.com/btcsuite/btcd@$(BTCD_VERSION) github.com/btcsuite/btcd/cmd/btcctl@$(BTCD_VERSION)

.PHONY: anvil
anvil: $(ANVIL) ## install the pinned anvil (npm @foundry-rs/anvil 1.7.1, tools/anvil) the addrd tests run as a second EVM node
$(ANVIL): tools/anvil/package.json tools/anvil/package-lock.json
	npm ci --prefix tools/anvil --no-audit --no-fund
	@touch $@

.PHONY: netlify
netlify: $(NETLIFY) ## install Netlify's _redirects parser and matcher (npm, pinned in tools/netlify) for the tests
$(NETLIFY): tools/netlify/package.json tools/netlify/package-lock.json
	npm ci --prefix tools/netlify --no-audit --no-fund
	@touch $@

.PHONY: tools
tools: minio cosign crane geth op-geth btcd netlify anvil ## build the pinned MinIO server, cosign, crane, geth, op-geth and btcd; install the npm packages

.PHONY: clean
clean: ## remove build output and the demo tree
	rm -rf bin/wharf bin/addrd public wharf.db addrd.db
