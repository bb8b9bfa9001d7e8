#!/bin/bash
# One lab host's PID 1 side. Run by unshare in new PID, mount, UTS, IPC and
# cgroup namespaces, as root, with the host's name, its scratch directory
# (empty, outside any overlay) and the lab's copy of the machine's package
# state as arguments. It builds the host's root as a tmpfs-backed overlay of
# the machine's /, makes the kernel file systems private to it, then becomes
# systemd. Every mount it makes lives in its own mount namespace and goes
# when the host's last process does.
set -euo pipefail
name=$1
scratch=$2
pkgstate=$3

mount --make-rprivate /
mount -t tmpfs -o size=4g,mode=0700 lab-"$name" "$scratch"
mkdir -p "$scratch/upper" "$scratch/work" "$scratch/root"
# The host's package state (dpkg's and apt's) is its own from the start: the
# lab's copy (a tar), taken under the machine's locks, goes into the upper
# layer with its directories marked opaque (the trusted.overlay.opaque xattr
# it carries), so the machine's live ones never show through.
tar --extract --file="$pkgstate" --directory="$scratch/upper" \
	--same-owner --same-permissions --numeric-owner \
	--xattrs --xattrs-include='trusted.overlay.opaque'
mount -t overlay overlay -o "lowerdir=/,upperdir=$scratch/upper,workdir=$scratch/work" "$scratch/root"
r=$scratch/root

hostname "$name"
echo "$name" >"$r/etc/hostname"
# A machine id of its own, so journald and the agent's facts tell hosts apart.
tr -d '-' </proc/sys/kernel/random/uuid >"$r/etc/machine-id"

# Kernel file systems: a fresh proc for the new PID namespace, sysfs and
# /proc/sys read-only (a writable /proc/sys would let systemd-sysctl change
# the machine's kernel), a fresh cgroup2 hierarchy rooted at this host's own
# cgroup (the cgroup namespace), private /run, /tmp and /dev.
mount -t proc proc "$r/proc"
mount --bind "$r/proc/sys" "$r/proc/sys"
mount -o remount,bind,ro "$r/proc/sys"
mount -t sysfs -o ro sysfs "$r/sys"
mount -t cgroup2 cgroup2 "$r/sys/fs/cgroup"
mount -t tmpfs -o mode=0755 tmpfs "$r/run"
mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
mount -t tmpfs -o mode=0755 tmpfs "$r/dev"
for d in null zero full random urandom tty; do
	touch "$r/dev/$d"
	mount --bind "/dev/$d" "$r/dev/$d"
done
mkdir -p "$r/dev/pts" "$r/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$r/dev/pts"
ln -s pts/ptmx "$r/dev/ptmx"
mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"
ln -s /proc/self/fd "$r/dev/fd"

# The machine's enabled units are not this host's: start from none. Mask what
# touches hardware or the machine's kernel, and the tmpfiles rule that would
# empty /tmp (here a fresh tmpfs anyway).
rm -rf "$r"/etc/systemd/system/*.wants
for u in systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket \
	systemd-udev-trigger.service systemd-udev-settle.service \
	systemd-sysctl.service systemd-modules-load.service systemd-binfmt.service \
	proc-sys-fs-binfmt_misc.automount proc-sys-fs-binfmt_misc.mount \
	systemd-timesyncd.service systemd-pstore.service systemd-tmpfiles-clean.timer \
	getty@tty1.service console-getty.service getty.target \
	sys-kernel-debug.mount sys-kernel-tracing.mount sys-kernel-config.mount \
	sys-fs-fuse-connections.mount dev-hugepages.mount dev-mqueue.mount \
	systemd-remount-fs.service systemd-firstboot.service \
	apt-daily.timer apt-daily-upgrade.timer; do
	ln -sf /dev/null "$r/etc/systemd/system/$u"
done
echo 'd /tmp 1777 root root -' >"$r/etc/tmpfiles.d/tmp.conf"

# Debian's container convention: packages do not start services at install.
printf '#!/bin/sh\n# lab host: packages start no service at install\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
chmod 0755 "$r/usr/sbin/policy-rc.d"

# The unit the host boots to: basic.target and what is enabled for it.
cat >"$r/etc/systemd/system/lab.target" <<UNIT
[Unit]
Description=CCM Fleet lab host
Requires=basic.target
After=basic.target
AllowIsolate=yes
UNIT
mkdir -p "$r/etc/systemd/system/lab.target.wants" "$r/etc/systemd/system/multi-user.target.wants"

mkdir -p "$r/.lab-oldroot"
cd "$r"
pivot_root . .lab-oldroot
umount -l /.lab-oldroot
rmdir /.lab-oldroot
exec /lib/systemd/systemd --system --unit=lab.target
