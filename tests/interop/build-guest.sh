#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the rxe peer guest once: Debian's kernel package and a minimal Debian root filesystem
# (rdma-core, perftest, ...) packed into one initrd.  The result lands in
# $UROCE_INTEROP_DIR/guest-<hash of the inputs>/ (vmlinuz, initrd.img, ssh key) and is reused
# until an input changes.  Needs root and the Debian archive (UROCE_INTEROP_MIRROR).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
ui_need_root

out=$(ui_guest_dir)
if [ -s "$out/initrd.img" ] && [ -s "$out/vmlinuz" ]; then
	echo "$out"
	exit 0
fi

for tool in qemu-system-x86_64:qemu-system-x86 debootstrap:debootstrap zstd:zstd cpio:cpio \
	    ssh:openssh-client ssh-keygen:openssh-client tcpdump:tcpdump tshark:tshark \
	    depmod:kmod; do
	command -v "${tool%%:*}" >/dev/null ||
		ui_die "${tool%%:*} missing: apt-get install ${tool#*:} (or run tools/install-deps.sh)"
done

t0=$SECONDS
step() { ui_log "build +$((SECONDS - t0))s: $*"; }
tmp=$UI_DIR/build.tmp
rm -rf "$tmp"
mkdir -p "$tmp/debs" "$tmp/kernel"

# ---- kernel: Debian's own package, unpacked -----------------------------------------------
kernel_package() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
}
download_kernel() {
	kpkg=$(kernel_package)
	[ -n "$kpkg" ] && (cd "$tmp/debs" &&
		apt-get download -q -o APT::Sandbox::User=root "$kpkg" >/dev/null 2>&1)
}
step "downloading the kernel package"
if ! download_kernel; then
	apt-get update -qq	# no or stale package lists
	download_kernel || ui_die "cannot download linux-image-amd64's kernel (apt sources?)"
fi
step "$kpkg"
dpkg -x "$tmp/debs/$kpkg"_*.deb "$tmp/kernel"
kver=${kpkg#linux-image-}
kmods=$tmp/kernel/lib/modules/$kver
[ -n "$(find "$kmods" -name 'rdma_rxe.ko*' -print -quit)" ] || ui_die "$kpkg has no rdma_rxe module"

# ---- root filesystem ------------------------------------------------------------------------
root=$tmp/rootfs
step "debootstrap $UI_SUITE minbase + ${UI_GUEST_PKGS[*]}"
debootstrap --variant=minbase --include="$(IFS=,; echo "${UI_GUEST_PKGS[*]}")" \
	"$UI_SUITE" "$root" "$(ui_mirror)" >"$tmp/debootstrap.log" 2>&1 ||
	{ tail -20 "$tmp/debootstrap.log" >&2; ui_die "debootstrap failed (log: $tmp/debootstrap.log)"; }

step "kernel modules"
[ -f "$kmods/modules.dep" ] || depmod -b "$tmp/kernel" "$kver"
for m in "${UI_GUEST_MODS[@]}"; do
	modprobe -d "$tmp/kernel" -S "$kver" --show-depends "$m" ||
		ui_die "module $m not in $kpkg"
done | awk '$1 == "insmod" {print $2}' | sort -u | while read -r f; do
	rel=${f#"$kmods"/}
	mkdir -p "$root/lib/modules/$kver/$(dirname "$rel")"
	cp "$f" "$root/lib/modules/$kver/$rel"
done
cp "$kmods"/modules.order "$kmods"/modules.builtin "$kmods"/modules.builtin.modinfo \
	"$root/lib/modules/$kver/"
depmod -b "$root" "$kver"

step "guest configuration"
mkdir -p "$tmp/ssh"
ssh-keygen -q -t ed25519 -N '' -C uroce-interop -f "$tmp/ssh/id_ed25519"
install -m 0755 "$here/guest/init" "$root/init"
install -d -m 0700 "$root/root/.ssh"
install -m 0600 "$tmp/ssh/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
# dropbear refuses an account whose password field starts with '!'; '*' = no password login
sed -i 's/^root:[^:]*:/root:*:/' "$root/etc/shadow"
[ -e "$root/dev/console" ] || mknod -m 600 "$root/dev/console" c 5 1
[ -e "$root/dev/null" ] || mknod -m 666 "$root/dev/null" c 1 3

# rdma-core's own test suite (issue 9 compares uroce with rxe on it) stays; other docs go.
mv "$root/usr/share/doc/rdma-core/tests" "$tmp/rdma-core-tests" 2>/dev/null || true
rm -rf "$root"/usr/share/{doc,man,info,locale,lintian} "$root"/var/cache/apt/*.bin \
	"$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*_Packages
if [ -d "$tmp/rdma-core-tests" ]; then
	mkdir -p "$root/usr/share/doc/rdma-core"
	mv "$tmp/rdma-core-tests" "$root/usr/share/doc/rdma-core/tests"
fi

step "packing the initrd"
(cd "$root" && find . -xdev | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet |
	zstd -q -T0 -9 >"$tmp/initrd.img")
cp "$tmp/kernel/boot/vmlinuz-$kver" "$tmp/vmlinuz"
{
	echo "kernel $kpkg"
	echo "packages ${UI_GUEST_PKGS[*]}"
	chroot "$root" dpkg-query -W rdma-core ibverbs-providers perftest python3-pyverbs
} >"$tmp/VERSIONS"

# Only the finished image stays; older images (other input hashes) go.
rm -rf "$UI_DIR"/guest-*
mkdir -p "$out"
mv "$tmp/vmlinuz" "$tmp/initrd.img" "$tmp/ssh" "$tmp/VERSIONS" "$out/"
rm -rf "$tmp"
step "done: $out (initrd $(du -h "$out/initrd.img" | cut -f1))"
echo "$out"
