#!/usr/bin/env bash
# Builds zkbench's two images without a registry (`make images`):
#
#   zkbench/zookeeper  a Debian root file system (mmdebstrap) holding
#                      openjdk-17-jre-headless and libzookeeper-java, imported
#                      with `docker import`; entry point docker/zookeeper/zk-run
#   zkbench/zkbench    FROM scratch, the static zkbench binary; also the etcd
#                      member image (`/zkbench __etcd-member ...`)
#
# Each is tagged :VERSION and :latest and labelled zkbench.inputs=<sha256 of
# its inputs>. An image whose inputs have not changed is not rebuilt: the
# image already carrying that label is tagged again.
#
# Usage: docker/images.sh VERSION [zookeeper|zkbench]...
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:?usage: docker/images.sh VERSION [zookeeper|zkbench]...}
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(zookeeper zkbench)

suite=${DEBIAN_SUITE:-bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

fail() { echo "images: $*" >&2; exit 1; }

# The build folders, removed when a build returns (a RETURN trap) and when
# the script exits, a failed build's included (fail exits from inside it).
tmpdirs=()
trap 'rm -rf "${tmpdirs[@]}"' EXIT
newtmp() { mktemp -d /tmp/zkbench-images-XXXXXX; }

command -v docker >/dev/null || fail "no docker command: install Docker (apt-get install docker.io)"
docker info >/dev/null 2>&1 || fail "no Docker engine answers ($(docker info 2>&1 | grep -m1 -i error || echo 'docker info failed')): start it (systemctl start docker) or set DOCKER_HOST"

# existing NAME HASH: the id of NAME's image labelled with HASH, if any.
existing() { docker images -q --filter "label=zkbench.inputs=$2" "$1" | head -n1; }

# retag NAME ID: tag image ID as NAME:VERSION and NAME:latest.
retag() {
	docker tag "$2" "$1:$version"
	docker tag "$2" "$1:latest"
	echo "images: $1:$version ($(docker image inspect -f '{{.Size}}' "$2" | awk '{printf "%.0f MB", $1/1e6}'))"
}

zookeeper() {
	local name=zkbench/zookeeper
	local pkgs hash id tmp
	pkgs=$(grep -v '^#' docker/zookeeper/packages | paste -sd, -)
	# Docs and locales are dropped (man pages stay: update-alternatives
	# links into them); mmdebstrap removes apt's caches and lists itself.
	local mmopts=(--variant=essential "--include=$pkgs"
		'--dpkgopt=path-exclude=/usr/share/doc/*' '--dpkgopt=path-exclude=/usr/share/locale/*'
		'--customize-hook=copy-in docker/zookeeper/zk-run /usr/local/bin'
		'--customize-hook=chroot "$1" java -version')
	local sources=("deb $mirror $suite main" "deb $security $suite-security main")
	local importopts=(-c 'ENTRYPOINT ["/usr/local/bin/zk-run"]' -c 'EXPOSE 2181 2888 3888')
	# The inputs: the entry point, the package list, the suite, the mirrors
	# and the recipe (not this script's other lines).
	hash=$(cat docker/zookeeper/zk-run docker/zookeeper/packages <(printf '%s\n' "$suite" "${mmopts[@]}" "${sources[@]}" "${importopts[@]}") |
		sha256sum | cut -c1-16)
	if id=$(existing $name "$hash") && [ -n "$id" ]; then
		echo "images: $name inputs unchanged ($hash): not rebuilt"
		retag $name "$id"
		return
	fi
	command -v mmdebstrap >/dev/null || fail "$name: mmdebstrap is not installed (apt-get install mmdebstrap): it builds the image's root file system from Debian's packages"
	curl -fsS --max-time 20 -o /dev/null "$mirror/dists/$suite/Release" ||
		fail "$name: Debian's mirror $mirror does not answer (no network?): the image is built from its packages (set DEBIAN_MIRROR to another)"
	tmp=$(newtmp)
	tmpdirs+=("$tmp")
	trap 'rm -rf "$tmp"' RETURN
	echo "images: $name: mmdebstrap $suite with $pkgs (about 70 s)"
	mmdebstrap --quiet "${mmopts[@]}" "$suite" "$tmp/root.tar" "${sources[@]}" </dev/null ||
		fail "$name: mmdebstrap failed (see above)"
	docker import "${importopts[@]}" -c "LABEL zkbench.inputs=$hash" -c "LABEL zkbench.version=$version" \
		"$tmp/root.tar" "$name:$version" >/dev/null || fail "$name: docker import failed"
	retag $name "$name:$version"
}

zkbench() {
	local name=zkbench/zkbench
	local tmp hash id
	tmp=$(newtmp)
	tmpdirs+=("$tmp")
	trap 'rm -rf "$tmp"' RETURN
	CGO_ENABLED=0 ${GO:-go} build -trimpath -ldflags "-s -w -X main.version=$version" -o "$tmp/zkbench" ./cmd/zkbench ||
		fail "$name: the static zkbench binary did not build"
	cp docker/zkbench/Dockerfile "$tmp/"
	# The inputs: the Dockerfile and the binary.
	hash=$(cat "$tmp/Dockerfile" "$tmp/zkbench" | sha256sum | cut -c1-16)
	if id=$(existing $name "$hash") && [ -n "$id" ]; then
		echo "images: $name inputs unchanged ($hash): not rebuilt"
		retag $name "$id"
		return
	fi
	# The engine here has no buildx; the classic builder needs nothing
	# pulled for FROM scratch.
	DOCKER_BUILDKIT=0 docker build -q --label "zkbench.inputs=$hash" --label "zkbench.version=$version" \
		-t "$name:$version" "$tmp" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log" >&2; fail "$name: docker build failed"; }
	retag $name "$name:$version"
}

for t in "${targets[@]}"; do
	case $t in
	zookeeper | zkbench) $t ;;
	*) fail "unknown image $t (want zookeeper or zkbench)" ;;
	esac
done
