// SPDX-License-Identifier: MIT
/* Loading uroce's BPF programs: the tc ingress ICMP suppressor and the XDP loss injector. */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "uroce/host.h"
#include "host_bpf.h"
#include "host_qpn.h"
#include "bpf/qpn_filter.h"
#include "bpf/xdp_cfg.h"

_Static_assert(QPN_FILTER_BASE == HOST_QPN_BASE && QPN_FILTER_SLOTS == HOST_QPN_SLOTS,
	       "the socket filter's bitmap covers the QPN table");

#define XDP_PROG_NAME	"uroce_xdp"
#define LOSS_MAP_NAME	"uroce_loss_cfg"
#define QPN_FILTER_PROG	"uroce_qpn_filter"
#define QPN_FILTER_MAP	"uroce_qpns"

typedef struct uroce_xdp_cfg loss_cfg;

static pthread_mutex_t msg_lock = PTHREAD_MUTEX_INITIALIZER;
static char libbpf_msg[256];

/* libbpf talks on stderr by default: keep its last warning for our error line instead. */
static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (getenv("UROCE_DEBUG"))
		vfprintf(stderr, fmt, ap);
	else if (level <= LIBBPF_WARN) {
		size_t n;

		pthread_mutex_lock(&msg_lock);
		vsnprintf(libbpf_msg, sizeof(libbpf_msg), fmt, ap);
		n = strlen(libbpf_msg);
		while (n && (libbpf_msg[n - 1] == '\n' || libbpf_msg[n - 1] == ' '))
			libbpf_msg[--n] = '\0';
		pthread_mutex_unlock(&msg_lock);
	}
	return 0;
}

static void quiet_libbpf(void)
{
	libbpf_set_print(quiet_print);
	pthread_mutex_lock(&msg_lock);
	libbpf_msg[0] = '\0';
	pthread_mutex_unlock(&msg_lock);
}

static const char *fix_for(int ret)
{
	if ((ret == -EPERM || ret == -EACCES) && geteuid() != 0)
		return "run as root (needs CAP_NET_ADMIN and CAP_BPF)";
	if (ret == -EACCES)
		return "the kernel's BPF verifier refused the program: set UROCE_DEBUG=1 for its log";
	if (ret == -EOPNOTSUPP)
		return "the kernel lacks clsact/cls_bpf or XDP support for this device";
	return "set UROCE_DEBUG=1 to see libbpf's log";
}

static int fail(char *err, size_t errlen, int ret, const char *netdev, const char *what)
{
	snprintf(err, errlen, "%s: cannot %s (%s%s%s): %s", netdev, what, strerror(-ret),
		 libbpf_msg[0] ? "; libbpf: " : "", libbpf_msg, fix_for(ret));
	return ret;
}

static int netdev_index(const char *netdev, char *err, size_t errlen)
{
	unsigned idx = if_nametoindex(netdev);

	if (!idx) {
		snprintf(err, errlen, "no network interface '%s' in this network namespace (see `ip link`)",
			 netdev);
		return -ENODEV;
	}
	return (int)idx;
}

static struct bpf_object *open_loaded(const unsigned char *obj, size_t len, const char *name,
				      int *ret)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = name);
	struct bpf_object *o = bpf_object__open_mem(obj, len, &opts);

	if (!o) {
		*ret = -errno;
		return NULL;
	}
	*ret = bpf_object__load(o);
	if (*ret) {
		bpf_object__close(o);
		return NULL;
	}
	return o;
}

int host_kernel_filter_install(const char *netdev, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = DP_TC_HANDLE, .priority = DP_TC_PRIORITY,
		    .flags = BPF_TC_F_REPLACE);
	struct bpf_object *obj;
	struct bpf_program *prog;
	int ifindex, ret;

	quiet_libbpf();
	ifindex = netdev_index(netdev, err, errlen);
	if (ifindex < 0)
		return ifindex;
	obj = open_loaded(host_bpf_tc_ingress_obj, host_bpf_tc_ingress_obj_len, "uroce_tc", &ret);
	if (!obj)
		return fail(err, errlen, ret, netdev, "load the tc ingress BPF program");
	prog = bpf_object__find_program_by_name(obj, "uroce_tc_ingress");
	hook.ifindex = ifindex;
	ret = bpf_tc_hook_create(&hook);
	if (ret && ret != -EEXIST) {
		bpf_object__close(obj);
		return fail(err, errlen, ret, netdev, "create the clsact qdisc");
	}
	opts.prog_fd = bpf_program__fd(prog);
	ret = bpf_tc_attach(&hook, &opts);
	/* The filter holds the program; our object can go. */
	bpf_object__close(obj);
	if (ret)
		return fail(err, errlen, ret, netdev, "attach the tc ingress filter");
	return 0;
}

int host_kernel_filter_remove(const char *netdev, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = DP_TC_HANDLE, .priority = DP_TC_PRIORITY);
	int ifindex, ret;

	quiet_libbpf();
	ifindex = netdev_index(netdev, err, errlen);
	if (ifindex < 0)
		return ifindex;
	hook.ifindex = ifindex;
	ret = bpf_tc_query(&hook, &opts);
	if (ret == -ENOENT || ret == -EINVAL)
		return 0;	/* no such filter, or no clsact qdisc at all */
	opts.prog_fd = opts.prog_id = 0;
	opts.flags = 0;
	ret = bpf_tc_detach(&hook, &opts);
	if (ret && ret != -ENOENT)
		return fail(err, errlen, ret, netdev, "remove the tc ingress filter");
	return 0;
}

/* The uroce_loss_cfg map of our XDP program attached to @ifindex: fd, or -ENOENT / -errno. */
static int attached_loss_map(int ifindex)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct bpf_prog_info info;
	uint32_t map_ids[8], len;
	int prog_fd, map_fd = -ENOENT;

	if (bpf_xdp_query(ifindex, 0, &q) || !q.prog_id)
		return -ENOENT;
	prog_fd = bpf_prog_get_fd_by_id(q.prog_id);
	if (prog_fd < 0)
		return -errno;
	memset(&info, 0, sizeof(info));
	info.nr_map_ids = sizeof(map_ids) / sizeof(map_ids[0]);
	info.map_ids = (uint64_t)(uintptr_t)map_ids;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) || strcmp(info.name, XDP_PROG_NAME)) {
		close(prog_fd);
		return -EEXIST;	/* somebody else's XDP program */
	}
	close(prog_fd);
	for (uint32_t i = 0; i < info.nr_map_ids && i < 8 && map_fd < 0; i++) {
		struct bpf_map_info minfo;
		int fd = bpf_map_get_fd_by_id(map_ids[i]);

		if (fd < 0)
			continue;
		memset(&minfo, 0, sizeof(minfo));
		len = sizeof(minfo);
		if (!bpf_obj_get_info_by_fd(fd, &minfo, &len) && !strcmp(minfo.name, LOSS_MAP_NAME))
			map_fd = fd;
		else
			close(fd);
	}
	return map_fd;
}

/* Nothing left to do for an XDP program the uroce command attached. */
static bool cfg_idle(const loss_cfg *c)
{
	return !c->owner && !c->ppm && !c->rate_Bps && !c->pass_all;
}

/*
 * Change the settings of the XDP program on @netdev by @change, attaching the
 * program first when it is not there (and @change asks for something); detach it
 * when the uroce command attached it and nothing is left for it to do.
 */
static int xdp_cfg_change(const char *netdev, void (*change)(loss_cfg *c, const void *arg),
			  const void *arg, const char *what, char *err, size_t errlen)
{
	struct bpf_object *obj = NULL;
	loss_cfg cfg;
	uint32_t key = 0;
	int ifindex, map_fd, ret;

	quiet_libbpf();
	ifindex = netdev_index(netdev, err, errlen);
	if (ifindex < 0)
		return ifindex;
	map_fd = attached_loss_map(ifindex);
	if (map_fd == -EEXIST) {
		snprintf(err, errlen,
			 "%s: another XDP program is attached (`ip link show %s`); remove it first",
			 netdev, netdev);
		return -EEXIST;
	}
	memset(&cfg, 0, sizeof(cfg));
	if (map_fd >= 0 && bpf_map_lookup_elem(map_fd, &key, &cfg)) {
		ret = -errno;
		close(map_fd);
		return fail(err, errlen, ret, netdev, what);
	}
	change(&cfg, arg);
	if (cfg_idle(&cfg)) {
		ret = map_fd >= 0 ? bpf_xdp_detach(ifindex, 0, NULL) : 0;
		if (map_fd >= 0)
			close(map_fd);
		return ret ? fail(err, errlen, ret, netdev, what) : 0;
	}
	if (map_fd < 0) {
		struct bpf_program *prog;

		obj = open_loaded(host_bpf_xdp_obj, host_bpf_xdp_obj_len, "uroce_xdp", &ret);
		if (!obj)
			return fail(err, errlen, ret, netdev, "load the XDP program");
		prog = bpf_object__find_program_by_name(obj, XDP_PROG_NAME);
		ret = bpf_xdp_attach(ifindex, bpf_program__fd(prog), XDP_FLAGS_UPDATE_IF_NOEXIST,
				     NULL);
		if (ret) {
			bpf_object__close(obj);
			return fail(err, errlen, ret, netdev, "attach the XDP program");
		}
		map_fd = dup(bpf_map__fd(bpf_object__find_map_by_name(obj, LOSS_MAP_NAME)));
	}
	ret = bpf_map_update_elem(map_fd, &key, &cfg, BPF_ANY) ? -errno : 0;
	close(map_fd);
	if (obj)
		bpf_object__close(obj);
	return ret ? fail(err, errlen, ret, netdev, what) : 0;
}

static void set_loss(loss_cfg *c, const void *arg)
{
	const struct host_loss *loss = arg;

	c->ppm = loss->ppm;
	c->spare_responses = loss->requests_only;
	c->pass_all = loss->pass;
	c->seen = c->dropped = 0;
}

int host_loss_pass(const char *netdev, char *err, size_t errlen)
{
	struct host_loss pass = { .pass = true };

	return xdp_cfg_change(netdev, set_loss, &pass, "attach the loss injection", err, errlen);
}

int host_loss_set(const char *netdev, uint32_t ppm, bool requests_only, char *err,
		  size_t errlen)
{
	struct host_loss loss = { .ppm = ppm, .requests_only = requests_only };

	if (ppm > 1000000) {
		snprintf(err, errlen, "%s: loss rate above 100%%", netdev);
		return -EINVAL;
	}
	return xdp_cfg_change(netdev, set_loss, &loss, "set the loss rate", err, errlen);
}

int host_loss_clear(const char *netdev, char *err, size_t errlen)
{
	struct host_loss off = { 0 };

	return xdp_cfg_change(netdev, set_loss, &off, "remove the loss injection", err, errlen);
}

static void set_bottleneck(loss_cfg *c, const void *arg)
{
	const struct host_bottleneck *b = arg;

	c->rate_Bps = b->rate_mbps * 125000ull;
	c->buffer = b->buffer;
	c->kmin = b->kmin;
	c->kmax = b->kmax;
	c->pmax_ppm = b->pmax_ppm;
	c->queue = c->last_ns = 0;
	c->passed_bytes = c->marked = c->early_drops = c->queue_drops = 0;
}

int host_bottleneck_set(const char *netdev, const struct host_bottleneck *b, char *err,
			size_t errlen)
{
	if (b->rate_mbps && (b->kmin > b->kmax || b->kmax > b->buffer || b->pmax_ppm > 1000000)) {
		snprintf(err, errlen, "%s: marking needs kmin <= kmax <= buffer and pmax <= 100%%",
			 netdev);
		return -EINVAL;
	}
	return xdp_cfg_change(netdev, set_bottleneck, b, "set the bottleneck", err, errlen);
}


/* The loss map of the XDP program on @netdev.  Return: its fd, -ENODEV, -EEXIST (another program). */
static int netdev_loss_map(const char *netdev)
{
	unsigned idx = if_nametoindex(netdev);

	quiet_libbpf();
	if (!idx)
		return -ENODEV;
	return attached_loss_map((int)idx);
}

/* The settings and counters of the XDP program on @netdev.  Return: 0, -ENOENT (none of ours) or -errno. */
static int read_cfg(const char *netdev, loss_cfg *cfg)
{
	int map_fd = netdev_loss_map(netdev), ret;
	uint32_t key = 0;

	if (map_fd < 0)
		return map_fd == -EEXIST ? -ENOENT : map_fd;
	ret = bpf_map_lookup_elem(map_fd, &key, cfg) ? -errno : 0;
	close(map_fd);
	return ret;
}

int host_loss_get(const char *netdev, struct host_loss *loss)
{
	loss_cfg cfg;
	int ret = read_cfg(netdev, &cfg);

	if (ret)
		return ret;
	*loss = (struct host_loss){
		.ppm = cfg.ppm, .requests_only = cfg.spare_responses, .pass = cfg.pass_all,
		.seen = cfg.seen, .dropped = cfg.dropped,
	};
	return 0;
}

int host_bottleneck_get(const char *netdev, struct host_bottleneck *b)
{
	loss_cfg cfg;
	int ret = read_cfg(netdev, &cfg);

	if (ret)
		return ret;
	if (!cfg.rate_Bps)
		return -ENOENT;
	*b = (struct host_bottleneck){
		.rate_mbps = (uint32_t)(cfg.rate_Bps / 125000), .buffer = cfg.buffer,
		.kmin = cfg.kmin, .kmax = cfg.kmax, .pmax_ppm = cfg.pmax_ppm,
		.queue = cfg.queue, .passed_bytes = cfg.passed_bytes, .marked = cfg.marked,
		.early_drops = cfg.early_drops, .queue_drops = cfg.queue_drops,
	};
	return 0;
}

int host_bpf_xdp_claim(const char *netdev, uint32_t pid, uint32_t *ppm, uint32_t *holder,
		       char *err, size_t errlen)
{
	loss_cfg cfg = { 0 };
	uint32_t key = 0;
	int ifindex, map_fd, ret;

	quiet_libbpf();
	*ppm = 0;
	*holder = 0;
	ifindex = netdev_index(netdev, err, errlen);
	if (ifindex < 0)
		return ifindex;
	map_fd = attached_loss_map(ifindex);
	if (map_fd == -ENOENT)
		return 0;
	if (map_fd == -EEXIST) {
		snprintf(err, errlen,
			 "%s: another XDP program is attached (`ip link show %s`): af_xdp needs the netdev's XDP hook",
			 netdev, netdev);
		return -EBUSY;
	}
	if (map_fd < 0)
		return fail(err, errlen, map_fd, netdev, "inspect the XDP program");
	bpf_map_lookup_elem(map_fd, &key, &cfg);
	close(map_fd);
	if (cfg.owner > 1 && cfg.owner != pid && host_proc_alive((int32_t)cfg.owner, 0)) {
		*holder = cfg.owner;
		snprintf(err, errlen,
			 "%s: af_xdp is in use by process %u (one process per netdev queue): use af_packet to share the netdev",
			 netdev, cfg.owner);
		return -EBUSY;
	}
	/* Left by a process that died, or `uroce loss`: take its place, keep the loss rate. */
	*ppm = cfg.ppm;
	ret = bpf_xdp_detach(ifindex, 0, NULL);
	if (ret)
		return fail(err, errlen, ret, netdev, "remove a stale XDP program");
	return 0;
}

int host_bpf_xdp_attach_for(const char *netdev, uint32_t pid, uint32_t *holder)
{
	struct bpf_object *obj;
	loss_cfg cfg = { .owner = pid };
	uint32_t key = 0;
	char why[384];
	int ifindex, ret, xsks;

	ret = host_bpf_xdp_claim(netdev, pid, &cfg.ppm, holder, why, sizeof(why));
	if (ret)
		return ret;
	ifindex = netdev_index(netdev, why, sizeof(why));
	if (ifindex < 0)
		return ifindex;
	obj = open_loaded(host_bpf_xdp_obj, host_bpf_xdp_obj_len, "uroce_xdp", &ret);
	if (!obj)
		return ret;
	ret = bpf_map_update_elem(bpf_map__fd(bpf_object__find_map_by_name(obj, LOSS_MAP_NAME)),
				  &key, &cfg, BPF_ANY) ? -errno : 0;
	if (!ret)
		ret = bpf_xdp_attach(ifindex,
				     bpf_program__fd(bpf_object__find_program_by_name(obj, XDP_PROG_NAME)),
				     XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
	xsks = ret ? ret : fcntl(bpf_map__fd(bpf_object__find_map_by_name(obj, "xsks_map")),
				 F_DUPFD_CLOEXEC, 0);
	if (xsks == -1)
		xsks = -errno;
	/* The attached program holds itself and its maps; the object can go. */
	bpf_object__close(obj);
	if (xsks < 0 && !ret)
		bpf_xdp_detach(ifindex, 0, NULL);
	return xsks;
}

void host_bpf_xdp_detach_for(const char *netdev, uint32_t pid)
{
	loss_cfg cfg = { 0 };
	uint32_t key = 0;
	int ifindex = (int)if_nametoindex(netdev), map_fd;

	quiet_libbpf();
	map_fd = ifindex ? attached_loss_map(ifindex) : -ENODEV;
	if (map_fd < 0)
		return;
	if (!bpf_map_lookup_elem(map_fd, &key, &cfg) && cfg.owner == pid)
		bpf_xdp_detach(ifindex, 0, NULL);
	close(map_fd);
}

int host_bpf_xdp_set_owner(const char *netdev, uint32_t pid, uint32_t ppm)
{
	loss_cfg cfg = { .ppm = ppm, .owner = pid };
	int map_fd = netdev_loss_map(netdev), ret;
	uint32_t key = 0;

	if (map_fd < 0)
		return map_fd;
	ret = bpf_map_update_elem(map_fd, &key, &cfg, BPF_ANY) ? -errno : 0;
	close(map_fd);
	return ret;
}

int host_bpf_xdp_object_fd(void)
{
	int fd = memfd_create("uroce_xdp.bpf.o", MFD_CLOEXEC);
	size_t off = 0;

	if (fd < 0)
		return -errno;
	while (off < host_bpf_xdp_obj_len) {
		ssize_t n = write(fd, host_bpf_xdp_obj + off, host_bpf_xdp_obj_len - off);

		if (n <= 0) {
			int ret = n < 0 ? -errno : -EIO;

			close(fd);
			return ret;
		}
		off += (size_t)n;
	}
	quiet_libbpf();
	return fd;
}

int host_qpn_filter_load(struct host_qpn_filter *f, char *err, size_t errlen)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct bpf_object *obj;
	void *mem;
	int ret;

	*f = (struct host_qpn_filter){ .prog_fd = -1 };
	quiet_libbpf();
	obj = open_loaded(host_bpf_qpn_filter_obj, host_bpf_qpn_filter_obj_len, "uroce_qpnf", &ret);
	if (!obj)
		return fail(err, errlen, ret, "packet socket", "load the QPN socket filter");
	f->len = (sizeof(struct uroce_qpn_bits) + page - 1) / page * page;
	mem = mmap(NULL, f->len, PROT_READ | PROT_WRITE, MAP_SHARED,
		   bpf_map__fd(bpf_object__find_map_by_name(obj, QPN_FILTER_MAP)), 0);
	f->prog_fd = dup(bpf_program__fd(bpf_object__find_program_by_name(obj, QPN_FILTER_PROG)));
	ret = mem == MAP_FAILED || f->prog_fd < 0 ? -errno : 0;
	bpf_object__close(obj);
	if (ret) {
		if (mem != MAP_FAILED)
			munmap(mem, f->len);
		if (f->prog_fd >= 0)
			close(f->prog_fd);
		f->prog_fd = -1;
		return fail(err, errlen, ret, "packet socket", "map the QPN socket filter's bitmap");
	}
	f->bits = (uint64_t *)((struct uroce_qpn_bits *)mem)->w;
	f->mem = mem;
	return 0;
}

void host_qpn_filter_strict(struct host_qpn_filter *f, int ifindex, const uint8_t mac[6])
{
	struct uroce_qpn_bits *b = f->mem;

	memcpy(b->mac, mac, 6);
	__atomic_store_n(&b->ifindex, (uint32_t)ifindex, __ATOMIC_RELEASE);
}

int host_qpn_filter_attach(struct host_qpn_filter *f, int sock, char *err, size_t errlen)
{
	if (setsockopt(sock, SOL_SOCKET, SO_ATTACH_BPF, &f->prog_fd, sizeof(f->prog_fd)))
		return fail(err, errlen, -errno, "packet socket", "attach the QPN socket filter");
	return 0;
}

void host_qpn_filter_close(struct host_qpn_filter *f)
{
	if (!f->bits)
		return;
	munmap(f->mem, f->len);
	close(f->prog_fd);
	*f = (struct host_qpn_filter){ .prog_fd = -1 };
}
