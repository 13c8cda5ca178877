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

# The tests, as CI runs them: .ci/test says what runs, side by side and
# then one after the other (go test -race, the learner's run, the npm
# packages, go vet and the cross builds, PostgreSQL 18, Windows under wine).
test: node-server
	@GO=$(GO) bash .ci/test

# The Node.js servers that bank grade's tests grade (servers in other
# languages, written from the contract alone) need their npm packages:
# installed with npm ci when a lock file changes. Without npm, their tests
# say they did not run.
# testdata/exercises/node: the lesson's practice solutions on pg, which bank exercise's tests check.
NODE_DIRS = testdata/grade/node-server testdata/grade/node-redis testdata/grade/node-phases testdata/exercises/node testdata/webhooks/node testdata/payouts/node
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
# The same commit gives the same bytes (see cmd/dist).
dist:
	$(GO) run ./cmd/dist -out dist

npm:
	$(GO) run ./cmd/dist -out dist -npm

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
