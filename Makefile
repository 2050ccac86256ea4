# Flotilla build, test and lab targets. `make help` lists them.
SHELL := /usr/bin/env bash
GO ?= go
K8S_VERSION := $(shell cat hack/k8s/VERSION)
export FLOTILLA_K8S_DIR ?= $(HOME)/.cache/flotilla/k8s/$(K8S_VERSION)
BIN := bin/flotilla
LAB_DIR ?= $(CURDIR)/.lab
CLUSTERS ?= 3

.PHONY: help build test test-unit lab lab-down generate verify k8s-bin

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/flotilla and bin/flotilla-agent (the agent alone, small in memory)
	$(GO) build -o $(BIN) ./cmd/flotilla
	CGO_ENABLED=0 $(GO) build -o bin/flotilla-agent ./cmd/flotilla-agent # static: no libc mapped (~1.5 MB less resident)

k8s-bin: ## build the pinned Kubernetes binaries into $(FLOTILLA_K8S_DIR) when missing
	@hack/k8s/build.sh >/dev/null

test: k8s-bin ## run every test (unit and real-API-server integration)
	$(GO) test -count=1 -timeout 30m ./...

lab: k8s-bin build ## start a local fleet (hub + $(CLUSTERS) members) in $(LAB_DIR)
	$(BIN) lab up --clusters $(CLUSTERS) --dir $(LAB_DIR)

lab-down: ## stop the local fleet
	$(BIN) lab down --dir $(LAB_DIR)

generate: ## regenerate deepcopy and CRDs with controller-gen
	$(GO) tool controller-gen object paths=./api/...
	$(GO) tool controller-gen crd paths=./api/... output:crd:artifacts:config=config/crd/bases

verify: generate ## fail when generated files are stale; go vet
	@git diff --exit-code -- api config || { echo "generated files are stale: run make generate and commit" >&2; exit 1; }
	@test -z "$$(git ls-files --others --exclude-standard -- api config)" || { git ls-files --others --exclude-standard -- api config; echo "generated files not in git: add them" >&2; exit 1; }
	$(GO) vet ./...
