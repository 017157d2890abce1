#!/bin/sh
# Builds the Kubernetes tools of caldera's tests and benchmarks from the Go module proxy, once per
# set of pinned versions, into the cache (never the work tree):
#   $CACHE/kube/kubernetes-<v>-kwok-<v>-<hash>/bin/  kube-apiserver kube-controller-manager kube-scheduler
#                                                   kubectl kwok          (tools/kube/go.mod, one go build)
#                                      /volcano-crds/ Volcano's CRDs (all of them, jobflow's too, as its
#                                                   Helm chart installs them), from the volcano.sh/volcano module
#                                                   pinned in tools/volcano/go.sum
#   $CACHE/kube/volcano-<v>-<hash>/bin/              vc-scheduler vc-controller-manager (--volcano), from the
#                                                   same module: Volcano v1.14.1 with the published
#                                                   volcano.sh/apis v1.14.0 (tools/volcano/go.mod says why)
# <hash> covers the wrapper modules and this script, so a changed pin or flag builds anew; a complete
# directory is reused as it is. CACHE is $CALDERA_CACHE, else ~/.cache/caldera; the Go module and
# build caches live there too (go/mod, go/build).
#   build.sh                 build the Kubernetes tools if needed; print their directory
#   build.sh --volcano       the same for Volcano's binaries (fails, saying why, where volcano.sh/apis is not served)
#   build.sh --print-dir     print the Kubernetes tools' directory, build nothing
#   build.sh --print-volcano-dir
set -eu

here=$(cd "$(dirname "$0")" && pwd)
volcano_module=$(cd "$here/../volcano" && pwd)
cache=${CALDERA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/caldera}

version_of() { # module go.mod: the version a wrapper requires
	awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$2"
}
digest() {
	cat "$@" | sha256sum | cut -c1-12
}

k8s=$(version_of k8s.io/kubernetes "$here/go.mod")
kwok=$(version_of sigs.k8s.io/kwok "$here/go.mod")
volcano=$(version_of volcano.sh/volcano "$volcano_module/go.mod")
apis=$(version_of volcano.sh/apis "$volcano_module/go.mod")
kube_dir="$cache/kube/kubernetes-$k8s-kwok-$kwok-$(digest "$here/go.mod" "$here/go.sum" "$volcano_module/go.sum" "$here/build.sh")"
volcano_dir="$cache/kube/volcano-$volcano-$(digest "$volcano_module/go.mod" "$volcano_module/go.sum" "$here/build.sh")"

case "${1:-}" in
--print-dir) echo "$kube_dir"; exit 0 ;;
--print-volcano-dir) echo "$volcano_dir"; exit 0 ;;
esac

if ! command -v go >/dev/null 2>&1; then
	echo "no go command: the Kubernetes tools are built with Go (1.26) from the Go module proxy" >&2
	exit 1
fi
export GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" GOTOOLCHAIN=local CGO_ENABLED=0
export GOFLAGS="-mod=readonly -trimpath -buildvcs=false"

build_kube() {
	tmp="$kube_dir.tmp.$$"
	trap 'rm -rf "$tmp"' EXIT; trap 'exit 130' INT TERM
	echo "building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $k8s and kwok $kwok" \
		"from the Go module proxy into $kube_dir (the first time takes 10 CPU minutes)" >&2
	# As Kubernetes builds its release binaries: no cgo, tags selinux and notest, the version stamped in.
	ld="-s -w"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ld="$ld -X $pkg.gitVersion=$k8s -X $pkg.gitMajor=$(echo "$k8s" | cut -d. -f1 | tr -d v)"
		ld="$ld -X $pkg.gitMinor=$(echo "$k8s" | cut -d. -f2) -X $pkg.gitTreeState=clean"
	done
	go build -C "$here" -tags selinux,notest -ldflags "$ld" -o "$tmp/bin/" tool
	# Volcano's CRDs come from its module (the version and hash pinned in tools/volcano/go.sum).
	json=$(cd "$volcano_module" && go mod download -json "volcano.sh/volcano@$volcano")
	dir=$(echo "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	sum=$(echo "$json" | sed -n 's/^[[:space:]]*"Sum": "\(.*\)",$/\1/p')
	if ! grep -q "^volcano.sh/volcano $volcano $sum\$" "$volcano_module/go.sum"; then
		echo "volcano.sh/volcano $volcano: hash $sum is not the one in tools/volcano/go.sum" >&2
		exit 1
	fi
	mkdir -p "$tmp/volcano-crds"
	cp "$dir"/config/crd/volcano/bases/*.yaml "$dir"/config/crd/jobflow/bases/*.yaml "$tmp/volcano-crds/"
	chmod -R u+w "$tmp/volcano-crds"
	rm -rf "$kube_dir"
	mv "$tmp" "$kube_dir"
	trap - EXIT
}

build_volcano() {
	# volcano.sh/apis comes from the proxy like every other module; where the proxy refuses it (it answers
	# 403 for v1.14.1 and later, hence Volcano v1.14.1 with apis v1.14.0), say so and build nothing.
	if ! (cd "$volcano_module" && go mod download volcano.sh/apis >/dev/null 2>&1); then
		echo "Volcano $volcano cannot be built here: it needs volcano.sh/apis $apis, which the Go module" \
			"proxy does not serve (docs/kubernetes-harness.md, Volcano)" >&2
		exit 3
	fi
	tmp="$volcano_dir.tmp.$$"
	trap 'rm -rf "$tmp"' EXIT; trap 'exit 130' INT TERM
	echo "building vc-scheduler and vc-controller-manager $volcano into $volcano_dir" >&2
	ld="-s -w -X volcano.sh/volcano/pkg/version.Version=$volcano -X volcano.sh/volcano/pkg/version.GitSHA=$volcano"
	go build -C "$volcano_module" -ldflags "$ld" -o "$tmp/build/" tool
	mkdir -p "$tmp/bin"
	mv "$tmp/build/scheduler" "$tmp/bin/vc-scheduler"
	mv "$tmp/build/controller-manager" "$tmp/bin/vc-controller-manager"
	rm -rf "$tmp/build" "$volcano_dir"
	mv "$tmp" "$volcano_dir"
	trap - EXIT
}

if [ "${1:-}" = --volcano ]; then
	[ -d "$volcano_dir" ] || build_volcano
	echo "$volcano_dir"
else
	[ -d "$kube_dir" ] || build_kube
	echo "$kube_dir"
fi
