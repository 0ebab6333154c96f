#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs every Debian 12 package uroce needs to build, test, benchmark and demo (as root).
# usage: tools/install-deps.sh [--demo]   (--demo: only what tools/demo.sh needs)
set -euo pipefail

packages=(
	# build
	gcc clang llvm meson ninja-build pkg-config
	libdpdk-dev libibverbs-dev libpcap-dev libseccomp-dev libbpf-dev zlib1g-dev check
	# run: real verbs programs between network namespaces
	ibverbs-utils rdmacm-utils perftest iproute2
)
if [ "${1:-}" = --demo ]; then
	:
elif [ $# -gt 0 ]; then
	echo "install-deps: unknown argument '$1' (--demo installs only what tools/demo.sh needs)" >&2
	exit 2
else
	packages+=(
	# test: oracles, pyverbs
	python3-pyverbs tshark python3-scapy iputils-ping
	# more librdmacm clients (tests/integration/test_rdmacm_clients.py): libfabric's fi_* tools,
	# rsockets' header for the rpoll() client rsocket_poll.c
	libfabric-bin librdmacm-dev
	# baselines, plots and profiles for the benchmarks (tests/bench/run-suite.sh)
	iperf3 sockperf qperf gnuplot-nox linux-perf
	# interop with the kernel's Soft-RoCE in a qemu guest (tests/interop)
	qemu-system-x86 debootstrap zstd cpio kmod tcpdump openssh-client
	# real clients: UCX and Open MPI over UCX (tests/integration it-ucx, it-mpi)
	ucx-utils libucx0 openmpi-bin libopenmpi-dev
	)
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#packages[@]} packages present"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages (${missing[*]}); run as root to install them" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
