// SPDX-License-Identifier: MIT
/* `uroce exec -- PROGRAM ARGS`: run an unmodified verbs program on the uroce devices. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/netlink.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "uroce/config.h"
#include "uroce/sysfs.h"

/*
 * Where the provider and the completion-channel interposer are, in the
 * build tree (when this binary runs from it) and once installed; set by
 * tools/meson.build.  The provider is named as RDMAV_DRIVERS wants it:
 * without the "-rdmav34.so" suffix libibverbs appends.
 */
#ifndef UROCE_BUILD_TOOLS_DIR
#define UROCE_BUILD_TOOLS_DIR	""
#define UROCE_PROVIDER_BUILD	""
#define UROCE_PROVIDER_INSTALL	""
#define UROCE_COMPCHAN_BUILD	""
#define UROCE_COMPCHAN_INSTALL	""
#define UROCE_UCMA_BUILD	""
#define UROCE_UCMA_INSTALL	""
#endif
#define PROVIDER_SUFFIX		"-rdmav34.so"

static int exec_usage(FILE *out)
{
	fprintf(out,
		"usage: uroce exec [--no-sys-view] [--] PROGRAM [ARGS...]\n"
		"Runs PROGRAM with SYSFS_PATH=%s/%s, the uroce provider, the completion-channel\n"
		"interposer (for event mode, e.g. -e) and kernel RDMA netlink hidden.\n"
		"PROGRAM also sees uroce's devices in /sys/class/infiniband and\n"
		"/sys/class/infiniband_verbs (a mount namespace of its own, for a user without\n"
		"CAP_SYS_ADMIN inside a user namespace where the user is itself; the host's /sys is\n"
		"left as it is); --no-sys-view leaves /sys as it is for PROGRAM too.\n"
		"Polling programs also run with just `export SYSFS_PATH=%s/%s`.\n",
		host_run_dir(), UROCE_SYSFS_DIR, host_run_dir(), UROCE_SYSFS_DIR);
	return 2;
}

static bool from_build_tree(void)
{
	char self[PATH_MAX], build[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0 || !UROCE_BUILD_TOOLS_DIR[0] || !realpath(UROCE_BUILD_TOOLS_DIR, build))
		return false;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return false;
	*slash = '\0';
	return !strcmp(self, build);
}

/* Put @value in front of the @sep-separated list in @name. */
static int env_prepend(const char *name, const char *value, char sep)
{
	const char *old = getenv(name);
	char *joined;
	int ret;

	if (!old || !*old)
		return setenv(name, value, 1) ? -errno : 0;
	if (asprintf(&joined, "%s%c%s", value, sep, old) < 0)
		return -ENOMEM;
	ret = setenv(name, joined, 1) ? -errno : 0;
	free(joined);
	return ret;
}

/*
 * On a host whose kernel has RDMA, libibverbs lists devices through RDMA
 * netlink and never reads SYSFS_PATH.  Failing socket(AF_NETLINK, *,
 * NETLINK_RDMA) with EPROTONOSUPPORT, what a kernel without RDMA answers,
 * makes it fall back to sysfs.  Nothing else is filtered.
 */
static int hide_rdma_netlink(void)
{
	scmp_filter_ctx sc = seccomp_init(SCMP_ACT_ALLOW);
	int ret;

	if (!sc)
		return -ENOMEM;
	ret = seccomp_rule_add(sc, SCMP_ACT_ERRNO(EPROTONOSUPPORT), SCMP_SYS(socket), 2,
			       SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
			       SCMP_A2(SCMP_CMP_EQ, NETLINK_RDMA));
	if (!ret)
		ret = seccomp_load(sc);
	seccomp_release(sc);
	return ret;
}

/* The classes uroce's tree supplies in place of the host's. */
static const char *const view_classes[] = { "infiniband", "infiniband_verbs" };

static bool is_view_class(const char *name)
{
	for (size_t i = 0; i < sizeof(view_classes) / sizeof(view_classes[0]); i++)
		if (!strcmp(name, view_classes[i]))
			return true;
	return false;
}

/* Bind @src on a new directory /sys/class/@name, read-only when @ro. */
static int bind_class(const char *src, const char *name, bool ro)
{
	char dst[PATH_MAX];

	snprintf(dst, sizeof(dst), "/sys/class/%s", name);
	if (mkdir(dst, 0755) || mount(src, dst, NULL, MS_BIND | MS_REC, NULL))
		return -errno;
	if (ro && mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID |
			MS_NODEV | MS_NOEXEC, NULL))
		return -errno;
	return 0;
}

/*
 * sys_view() - show uroce's devices at the real sysfs paths, to this process only.
 * @sysfs: uroce's tree (<run dir>/sysfs)
 *
 * UCX and rdma-core's tests read /sys/class/infiniband themselves, not
 * SYSFS_PATH.  In a mount namespace of its own (slave to the host's, so
 * nothing leaks out), a tmpfs goes over /sys/class holding every host class
 * bound back in, reached through a descriptor opened before it, but
 * infiniband and infiniband_verbs bound read-only from @sysfs; the tmpfs is
 * then made read-only, as sysfs is.
 * Return: 0; -EPERM before anything changed without CAP_SYS_ADMIN; -errno
 * with the step in @what otherwise.
 */
static int sys_view(const char *sysfs, const char **what)
{
	char src[PATH_MAX + 64];
	struct dirent *de;
	int ret = 0, real;
	bool mounted = false;
	DIR *dir;

	*what = "unshare the mount namespace";
	if (unshare(CLONE_NEWNS))
		return -errno;
	*what = "make / a slave mount";
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL))
		return -errno;
	/* Opened in the new namespace: a bind's source must be a mount of the caller's. */
	*what = "open /sys/class";
	real = open("/sys/class", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (real < 0)
		return -errno;
	dir = fdopendir(real);
	if (!dir) {
		ret = -errno;
		close(real);
		return ret;
	}
	*what = "mount a tmpfs on /sys/class";
	if (mount("uroce-sys-class", "/sys/class", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0755"))
		goto out_errno;
	mounted = true;
	*what = "bind the host's classes";
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.' || is_view_class(de->d_name))
			continue;
		snprintf(src, sizeof(src), "/proc/self/fd/%d/%s", real, de->d_name);
		ret = bind_class(src, de->d_name, false);
		if (ret)
			goto out_close;
	}
	*what = "bind uroce's classes";
	for (size_t i = 0; i < sizeof(view_classes) / sizeof(view_classes[0]); i++) {
		snprintf(src, sizeof(src), "%s/class/%s", sysfs, view_classes[i]);
		ret = bind_class(src, view_classes[i], true);
		if (ret)
			goto out_close;
	}
	*what = "make /sys/class read-only";
	if (mount(NULL, "/sys/class", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV |
		  MS_NOEXEC, NULL))
		goto out_errno;
	goto out_close;
out_errno:
	ret = -errno;
out_close:
	closedir(dir);
	/* Half a view is worse than none: the host's /sys/class comes back. */
	if (ret && mounted)
		umount2("/sys/class", MNT_DETACH);
	return ret;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * own_user_ns() - for a caller without CAP_SYS_ADMIN: a user namespace of its
 * own, in which it may mount, as itself (its uid and gid mapped to
 * themselves, so files, the broker and other processes see the same user).
 * The capabilities it has there end at execve(), as a non-root user's do.
 */
static int own_user_ns(void)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char map[64];
	int ret;

	if (unshare(CLONE_NEWUSER))
		return -errno;
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)uid, (unsigned)uid);
	ret = write_file("/proc/self/uid_map", map);
	if (ret)
		return ret;
	/* Unprivileged, a gid map needs setgroups() denied; the groups held stay held. */
	ret = write_file("/proc/self/setgroups", "deny");
	if (ret)
		return ret;
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)gid, (unsigned)gid);
	return write_file("/proc/self/gid_map", map);
}

int cmd_exec(int argc, char **argv)
{
	bool build = from_build_tree();
	const char *provider = build ? UROCE_PROVIDER_BUILD : UROCE_PROVIDER_INSTALL;
	const char *compchan = build ? UROCE_COMPCHAN_BUILD : UROCE_COMPCHAN_INSTALL;
	const char *ucma = build ? UROCE_UCMA_BUILD : UROCE_UCMA_INSTALL;
	char sysfs[PATH_MAX], path[PATH_MAX + 64];
	struct stat st;
	bool view = true;
	const char *what;
	int first = 1, ret;

	for (; first < argc && argv[first][0] == '-'; first++) {
		if (!strcmp(argv[first], "--")) {
			first++;
			break;
		}
		if (!strcmp(argv[first], "-h") || !strcmp(argv[first], "--help")) {
			exec_usage(stdout);
			return 0;
		}
		if (strcmp(argv[first], "--no-sys-view")) {
			fprintf(stderr, "uroce exec: unknown option %s (a program's options go after "
				"`--`)\n", argv[first]);
			return 2;
		}
		view = false;
	}
	if (first >= argc)
		return exec_usage(stderr);
	link_purge_stale();
	if (!provider[0] || !compchan[0]) {
		fprintf(stderr, "uroce exec: this uroce was built without the provider "
			"(reconfigure with -Dprovider=enabled)\n");
		return 1;
	}

	snprintf(sysfs, sizeof(sysfs), "%s/%s", host_run_dir(), UROCE_SYSFS_DIR);
	snprintf(path, sizeof(path), "%s/class/infiniband_verbs", sysfs);
	if (stat(path, &st)) {
		fprintf(stderr, "uroce exec: no uroce device in %s: create one with "
			"`uroce link add NAME netdev IFACE`\n", host_run_dir());
		return 1;
	}
	snprintf(path, sizeof(path), "%s" PROVIDER_SUFFIX, provider);
	if (stat(path, &st)) {
		fprintf(stderr, "uroce exec: the provider %s is missing: rebuild or reinstall uroce\n",
			path);
		return 1;
	}
	if (stat(compchan, &st) || stat(ucma, &st)) {
		fprintf(stderr, "uroce exec: the interposer %s or %s is missing: rebuild or "
			"reinstall uroce\n", compchan, ucma);
		return 1;
	}

	if (setenv("SYSFS_PATH", sysfs, 1) || setenv("UROCE_RUN_DIR", host_run_dir(), 1) ||
	    env_prepend("RDMAV_DRIVERS", provider, ':') || env_prepend("LD_PRELOAD", compchan, ':') ||
	    env_prepend("LD_PRELOAD", ucma, ':')) {
		fprintf(stderr, "uroce exec: cannot set the environment: %s\n", strerror(errno));
		return 1;
	}
	ret = view ? sys_view(sysfs, &what) : 0;
	/* An ordinary user gets the view in a user namespace of its own, where the kernel allows it. */
	if (ret == -EPERM && !own_user_ns()) {
		ret = sys_view(sysfs, &what);
		if (ret)
			ret = -EPERM;
	}
	if (ret && ret != -EPERM) {
		fprintf(stderr, "uroce exec: cannot give %s its /sys view (%s: %s); run it with "
			"--no-sys-view\n", argv[first], what, strerror(-ret));
		return 1;
	}
	ret = hide_rdma_netlink();
	if (ret) {
		fprintf(stderr, "uroce exec: cannot install the seccomp filter hiding RDMA netlink: "
			"%s\n", strerror(-ret));
		return 1;
	}
	execvp(argv[first], argv + first);
	fprintf(stderr, "uroce exec: cannot run %s: %s\n", argv[first], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
