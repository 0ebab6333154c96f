// SPDX-License-Identifier: MIT
/* Starting DPDK's EAL inside someone else's process: once, lazily, quietly, without pinning. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_errno.h>
#include <rte_log.h>

#include "dp_eal.h"

#define EAL_MAX_ARGS	64
#define LOG_LINES	16
#define LOG_LINE_LEN	256

static pthread_mutex_t eal_lock = PTHREAD_MUTEX_INITIALIZER;
static int eal_result = 1;	/* 1: not tried yet, 0: running, <0: failed with -errno */
static char eal_error[512];

/*
 * DPDK's log: the last lines in memory, so an error can quote DPDK's reason.
 * Lines arrive through a stdio cookie stream (line buffered).
 */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_ring[LOG_LINES][LOG_LINE_LEN];
static unsigned log_count, log_mark;
static char log_partial[LOG_LINE_LEN];
static size_t log_partial_len;
static bool log_to_stderr;
static FILE *log_stream;

static void log_push_line(const char *line, size_t len)
{
	char *slot = log_ring[log_count % LOG_LINES];

	if (len >= LOG_LINE_LEN)
		len = LOG_LINE_LEN - 1;
	memcpy(slot, line, len);
	slot[len] = '\0';
	log_count++;
}

static ssize_t log_write(void *cookie, const char *buf, size_t size)
{
	(void)cookie;
	pthread_mutex_lock(&log_lock);
	for (size_t i = 0; i < size; i++) {
		if (buf[i] == '\n') {
			log_push_line(log_partial, log_partial_len);
			log_partial_len = 0;
		} else if (log_partial_len < sizeof(log_partial) - 1) {
			log_partial[log_partial_len++] = buf[i];
		}
	}
	pthread_mutex_unlock(&log_lock);
	if (log_to_stderr)
		fwrite(buf, 1, size, stderr);
	return (ssize_t)size;
}

void dp_eal_log_mark(void)
{
	if (log_stream)
		fflush(log_stream);
	pthread_mutex_lock(&log_lock);
	log_mark = log_count;
	pthread_mutex_unlock(&log_lock);
}

static bool looks_like_error(const char *line)
{
	static const char *const words[] = {
		"rror", "ail", "annot", "denied", "not ", "No such", "nvalid", "exceed",
		"unable", "Unable", "too ",
	};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(line, words[i]))
			return true;
	return false;
}

void dp_eal_log_tail(char *buf, size_t len)
{
	const char *best = NULL;

	if (log_stream)
		fflush(log_stream);
	pthread_mutex_lock(&log_lock);
	for (unsigned i = log_count; i > log_mark && log_count - i < LOG_LINES; i--) {
		const char *line = log_ring[(i - 1) % LOG_LINES];

		if (!best)
			best = line;
		if (looks_like_error(line)) {
			best = line;
			break;
		}
	}
	snprintf(buf, len, "%s", best ? best : "");
	/* DPDK prefixes lines with "driver: " or "func(): "; keep them, drop trailing blanks. */
	for (size_t n = strlen(buf); n && isspace((unsigned char)buf[n - 1]); n--)
		buf[n - 1] = '\0';
	pthread_mutex_unlock(&log_lock);
}

static int open_log_stream(void)
{
	static const cookie_io_functions_t io = { .write = log_write };

	log_to_stderr = getenv("UROCE_DEBUG") != NULL;
	log_stream = fopencookie(NULL, "w", io);
	if (!log_stream)
		return -errno;
	setvbuf(log_stream, NULL, _IOLBF, 0);
	rte_openlog_stream(log_stream);
	return 0;
}

struct eal_argv {
	int	argc;
	char	*argv[EAL_MAX_ARGS + 1];
	char	storage[4096];
	size_t	used;
};

static int argv_add(struct eal_argv *a, const char *s)
{
	size_t n = strlen(s) + 1;

	if (a->argc >= EAL_MAX_ARGS || a->used + n > sizeof(a->storage))
		return -E2BIG;
	memcpy(a->storage + a->used, s, n);
	a->argv[a->argc++] = a->storage + a->used;
	a->argv[a->argc] = NULL;
	a->used += n;
	return 0;
}

/* Does the user's eal_args line contain one of @opts (as "-x", "-x VAL" or "--opt=VAL")? */
static bool user_has(const char *eal_args, const char *const *opts)
{
	char buf[sizeof(((struct host_link_cfg *)0)->eal_args)];
	char *save = NULL;

	snprintf(buf, sizeof(buf), "%s", eal_args);
	for (char *t = strtok_r(buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
		for (const char *const *o = opts; *o; o++) {
			size_t n = strlen(*o);

			if (!strncmp(t, *o, n) && (t[n] == '\0' || t[n] == '='))
				return true;
		}
	return false;
}

/* "0-3,6": the CPUs the calling thread may run on, as EAL's --lcores set syntax wants. */
static int cpu_list(const cpu_set_t *set, char *buf, size_t len)
{
	size_t used = 0;
	int first = -1;

	buf[0] = '\0';
	for (int cpu = 0; cpu <= CPU_SETSIZE; cpu++) {
		bool in = cpu < CPU_SETSIZE && CPU_ISSET(cpu, set);

		if (in && first < 0)
			first = cpu;
		if (!in && first >= 0) {
			int n = first == cpu - 1 ?
				snprintf(buf + used, len - used, "%s%d", used ? "," : "", first) :
				snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", first,
					 cpu - 1);
			if (n < 0 || (size_t)n >= len - used)
				return -E2BIG;
			used += (size_t)n;
			first = -1;
		}
	}
	return used ? 0 : -EINVAL;
}

/*
 * PCI devices DPDK may take: every configured device with pmd = pci, so a
 * process can open any of them after the EAL has started for another.
 */
static int add_pci_allow_list(struct eal_argv *a, const struct host_link_cfg *cfg)
{
	char dir[512], err[256];
	struct dirent *de;
	bool any = false;
	DIR *d;
	int ret;

	if (cfg->pmd == HOST_PMD_PCI) {
		if ((ret = argv_add(a, "-a")) || (ret = argv_add(a, cfg->pmd_args)))
			return ret;
		any = true;
	}
	snprintf(dir, sizeof(dir), "%s/devices", host_run_dir());
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		struct host_link_cfg other;
		char name[sizeof(other.name)];
		size_t n = strlen(de->d_name);

		if (n <= 5 || n - 5 >= sizeof(name) || strcmp(de->d_name + n - 5, ".conf"))
			continue;
		memcpy(name, de->d_name, n - 5);
		name[n - 5] = '\0';
		if (!strcmp(name, cfg->name) || host_link_cfg_load(name, &other, err, sizeof(err)))
			continue;
		if (other.pmd != HOST_PMD_PCI || !other.pmd_args[0])
			continue;
		if ((ret = argv_add(a, "-a")) || (ret = argv_add(a, other.pmd_args)))
			break;
		any = true;
	}
	if (d)
		closedir(d);
	return any ? 0 : argv_add(a, "--no-pci");
}

static int build_args(struct eal_argv *a, const struct host_link_cfg *cfg, const cpu_set_t *cpus)
{
	static const char *const mem_opts[] = {
		"-m", "--socket-mem", "--huge-dir", "--in-memory", "--legacy-mem", "--no-huge",
		NULL };
	static const char *const lcore_opts[] = { "-l", "-c", "--lcores", NULL };
	char buf[1024], list[900];
	char user[sizeof(cfg->eal_args)];
	char *save = NULL;
	int ret;

	if ((ret = argv_add(a, "uroce")))
		return ret;
	/*
	 * No hugepages: mempools live in plain anonymous memory (private, see
	 * __wrap_memfd_create()), which
	 * the vdev PMDs and AF_XDP's UMEM accept; 256 MiB is address space,
	 * only what the pools touch becomes resident.
	 */
	if (!user_has(cfg->eal_args, mem_opts) &&
	    ((ret = argv_add(a, "--no-huge")) || (ret = argv_add(a, "-m")) ||
	     (ret = argv_add(a, "256"))))
		return ret;
	/* No shared files: no config lock, no multi-process socket, any number of processes. */
	if ((ret = argv_add(a, "--no-shconf")) || (ret = argv_add(a, "--file-prefix=uroce")) ||
	    (ret = argv_add(a, "--no-telemetry")))
		return ret;
	/* One lcore whose CPU set is the caller's own: DPDK pins nothing new. */
	if (!user_has(cfg->eal_args, lcore_opts)) {
		if ((ret = cpu_list(cpus, list, sizeof(list))))
			return ret;
		snprintf(buf, sizeof(buf), "--lcores=0@(%s)", list);
		if ((ret = argv_add(a, buf)))
			return ret;
	}
	if ((ret = argv_add(a, getenv("UROCE_DEBUG") ? "--log-level=7" : "--log-level=4")))
		return ret;
	if ((ret = add_pci_allow_list(a, cfg)))
		return ret;
	snprintf(user, sizeof(user), "%s", cfg->eal_args);
	for (char *t = strtok_r(user, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
		if ((ret = argv_add(a, t)))
			return ret;
	return 0;
}

/* Last "EAL: ..." line DPDK printed to stdout/stderr (captured in @fd). */
static void captured_reason(int fd, char *buf, size_t len)
{
	char text[8192];
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
	char *line, *save = NULL;

	buf[0] = '\0';
	if (n <= 0)
		return;
	text[n] = '\0';
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (!strncmp(line, "EAL: ", 5) && strncmp(line, "EAL: FATAL", 10))
			snprintf(buf, len, "%s", line);
}

static const char *fix_for(int err, const char *reason)
{
	if (err == EACCES || err == EPERM || strstr(reason, "ermission"))
		return "run as root (DPDK needs CAP_NET_RAW and CAP_IPC_LOCK)";
	if (strstr(reason, "rgument") || strstr(reason, "option") || err == EINVAL)
		return "fix eal_args in the device configuration (`uroce link add ... --eal ARGS`)";
	if (strstr(reason, "vfio") || strstr(reason, "VFIO"))
		return "load vfio-pci and bind the NIC to it (dpdk-devbind.py -b vfio-pci BDF)";
	if (err == ENOMEM)
		return "give DPDK more memory (eal_args -m MB) or free memory";
	return "set UROCE_DEBUG=1 to see DPDK's full log";
}

int __real_memfd_create(const char *name, unsigned int flags);
int __wrap_memfd_create(const char *name, unsigned int flags);

/*
 * EAL --no-huge backs its memory with a memfd mapped shared (for vhost,
 * which uroce does not use), or, when that fails, with private anonymous
 * memory.  Shared, a child forked after its parent opened a device (as
 * rdma-core's rdmacm tests and multiprocessing do) would run the same heap
 * as the parent with its own copy of the heap's bookkeeping, and both spin
 * or corrupt it; private, the child has a copy of it all and opens devices
 * of its own.
 */
int __wrap_memfd_create(const char *name, unsigned int flags)
{
	if (!strcmp(name, "nohuge")) {
		errno = ENOSYS;
		return -1;
	}
	return __real_memfd_create(name, flags);
}

static int eal_init_quiet(struct eal_argv *a, char *reason, size_t reasonlen)
{
	int capture, saved_out, saved_err, ret;

	/*
	 * DPDK prints its usage text to stdout and "EAL: FATAL" alerts to
	 * stderr, outside its log: catch both while rte_eal_init() runs so the
	 * application never sees them.
	 */
	fflush(NULL);
	capture = memfd_create("uroce-eal", MFD_CLOEXEC);
	saved_out = dup(STDOUT_FILENO);
	saved_err = dup(STDERR_FILENO);
	if (capture >= 0 && saved_out >= 0 && saved_err >= 0 && !getenv("UROCE_DEBUG")) {
		dup2(capture, STDOUT_FILENO);
		dup2(capture, STDERR_FILENO);
	}
	ret = rte_eal_init(a->argc, a->argv);
	fflush(NULL);
	if (saved_out >= 0) {
		dup2(saved_out, STDOUT_FILENO);
		close(saved_out);
	}
	if (saved_err >= 0) {
		dup2(saved_err, STDERR_FILENO);
		close(saved_err);
	}
	reason[0] = '\0';
	if (ret < 0) {
		dp_eal_log_tail(reason, reasonlen);
		if (!reason[0] && capture >= 0)
			captured_reason(capture, reason, reasonlen);
	}
	if (capture >= 0)
		close(capture);
	return ret < 0 ? -(rte_errno ? rte_errno : EINVAL) : 0;
}

static int eal_start_locked(const struct host_link_cfg *cfg, char *err, size_t errlen)
{
	struct eal_argv *a;
	char reason[LOG_LINE_LEN];
	cpu_set_t cpus;
	int ret;

	a = calloc(1, sizeof(*a));
	if (!a) {
		snprintf(err, errlen, "%s: out of memory starting DPDK", cfg->name);
		return -ENOMEM;
	}
	ret = pthread_getaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	if (ret) {
		snprintf(err, errlen, "%s: cannot read the thread's CPU affinity: %s", cfg->name,
			 strerror(ret));
		free(a);
		return -ret;
	}
	ret = open_log_stream();
	if (!ret)
		ret = build_args(a, cfg, &cpus);
	if (ret) {
		snprintf(err, errlen, "%s: cannot prepare DPDK's arguments (%s): check eal_args",
			 cfg->name, strerror(-ret));
		free(a);
		return ret;
	}
	dp_eal_log_mark();
	ret = eal_init_quiet(a, reason, sizeof(reason));
	/* EAL pinned this thread to lcore 0's CPU set; give the application its own back. */
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	if (ret)
		snprintf(err, errlen, "%s: DPDK cannot start (%s%s%s): %s", cfg->name,
			 strerror(-ret), reason[0] ? ": " : "", reason, fix_for(-ret, reason));
	free(a);
	return ret;
}

/* TSC to ns: ns = tsc * mult >> 32, from the TSC rate the EAL measured. */
static uint64_t tsc_mult;

uint64_t dp_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t dp_clock_ns(void)
{
	uint64_t mult = __atomic_load_n(&tsc_mult, __ATOMIC_RELAXED);

	if (!mult)
		return dp_mono_ns();
	return (uint64_t)(((unsigned __int128)rte_get_tsc_cycles() * mult) >> 32);
}

int dp_eal_thread_register(void)
{
	return rte_thread_register() ? -rte_errno : 0;
}

void dp_eal_thread_unregister(void)
{
	rte_thread_unregister();
}

int dp_eal_start(const struct host_link_cfg *cfg, char *err, size_t errlen)
{
	int ret;

	pthread_mutex_lock(&eal_lock);
	if (eal_result == 1) {
		eal_result = eal_start_locked(cfg, eal_error, sizeof(eal_error));
		if (eal_result > 0)
			eal_result = -EINVAL;
		if (eal_result == 0 && rte_get_tsc_hz())
			__atomic_store_n(&tsc_mult, (uint64_t)((1000000000ull << 32) / rte_get_tsc_hz()),
					 __ATOMIC_RELAXED);
	}
	ret = eal_result;
	if (ret)
		snprintf(err, errlen, "%s", eal_error);
	pthread_mutex_unlock(&eal_lock);
	return ret;
}
