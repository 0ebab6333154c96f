// SPDX-License-Identifier: MIT
/*
 * An af_xdp port without privilege (dp_pmd_xdp_broker()): the PMD's calls
 * that need privilege go to the device's broker instead, through the
 * linker's --wrap (dataplane/dpdk/meson.build).
 *
 * Its AF_XDP sockets are set up here, as libxdp's xsk_umem__create() and
 * xsk_socket__create() would, on sockets the broker made: libxdp 1.3 makes
 * its own (CAP_NET_RAW), has no variant taking one, and is a shared library
 * whose socket() the linker cannot wrap.  The rings are the kernel's ABI
 * (linux/if_xdp.h) in libxdp's ring structs, which the PMD drives with
 * libxdp's inline ring functions as always.
 */
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/if_xdp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "uroce/host.h"
#include "host_qpn.h"
#include "dp_port_plan.h"

#ifndef SOL_XDP
#define SOL_XDP 283
#endif

struct broker_umem {
	int			fd;	/* the broker's socket; the first XSK's too */
	bool			fd_taken;
	void			*fill_map, *comp_map;
	size_t			fill_len, comp_len;
};

struct broker_xsk {
	int			fd;
	struct broker_umem	*umem;
	void			*rx_map, *tx_map;
	size_t			rx_len, tx_len;
};

/* The broker connection of the port being set up; the netdevs whose XDP program a broker holds. */
static atomic_int setup_conn = -1;
static atomic_bool umem_refused;	/* XDP_UMEM_REG: ENOBUFS (RLIMIT_MEMLOCK) */
#define XDP_BROKER_NETDEVS	16
static atomic_int broker_ifindex[XDP_BROKER_NETDEVS];

int dp_pmd_xdp_broker(int conn, int ifindex)
{
	atomic_store(&setup_conn, conn);
	if (conn < 0)
		return atomic_exchange(&umem_refused, false) ? -ENOBUFS : 0;
	for (unsigned i = 0; i < XDP_BROKER_NETDEVS; i++) {
		int none = 0;

		if (atomic_compare_exchange_strong(&broker_ifindex[i], &none, ifindex))
			break;
	}
	return 0;
}

int dp_xsk_broker(void)
{
	return atomic_load(&setup_conn);
}

/* Forget @ifindex's broker-held program; was there one? */
static bool broker_ifindex_forget(int ifindex)
{
	for (unsigned i = 0; ifindex > 0 && i < XDP_BROKER_NETDEVS; i++) {
		int held = ifindex;

		if (atomic_compare_exchange_strong(&broker_ifindex[i], &held, 0))
			return true;
	}
	return false;
}

/* Our UMEMs and sockets, told apart from libxdp's (other ports') by address. */
#define BROKER_OBJECTS	16
static pthread_mutex_t objects_lock = PTHREAD_MUTEX_INITIALIZER;
static void *objects[BROKER_OBJECTS];

static bool track(void *p)
{
	bool done = false;

	pthread_mutex_lock(&objects_lock);
	for (unsigned i = 0; i < BROKER_OBJECTS && !done; i++)
		if (!objects[i]) {
			objects[i] = p;
			done = true;
		}
	pthread_mutex_unlock(&objects_lock);
	return done;
}

/* Is @p one of ours?  Then it is forgotten when @forget. */
static bool ours(const void *p, bool forget)
{
	bool found = false;

	if (!p)
		return false;
	pthread_mutex_lock(&objects_lock);
	for (unsigned i = 0; i < BROKER_OBJECTS && !found; i++)
		if (objects[i] == p) {
			found = true;
			if (forget)
				objects[i] = NULL;
		}
	pthread_mutex_unlock(&objects_lock);
	return found;
}

/* Map ring @pgoff of @fd with @n descriptors of @desc_size at @off into @r (a prod or cons ring). */
static int ring_map(int fd, const struct xdp_ring_offset *off, uint32_t n, size_t desc_size,
		    uint64_t pgoff, struct xsk_ring_cons *r, void **map, size_t *len)
{
	*len = off->desc + n * desc_size;
	*map = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
		    (off_t)pgoff);
	if (*map == MAP_FAILED) {
		*map = NULL;
		return -errno;
	}
	r->mask = n - 1;
	r->size = n;
	r->producer = (uint32_t *)((char *)*map + off->producer);
	r->consumer = (uint32_t *)((char *)*map + off->consumer);
	r->flags = (uint32_t *)((char *)*map + off->flags);
	r->ring = (char *)*map + off->desc;
	return 0;
}

static int mmap_offsets(int fd, struct xdp_mmap_offsets *off)
{
	socklen_t len = sizeof(*off);

	return getsockopt(fd, SOL_XDP, XDP_MMAP_OFFSETS, off, &len) ? -errno : 0;
}

static void umem_free(struct broker_umem *u)
{
	if (u->fill_map)
		munmap(u->fill_map, u->fill_len);
	if (u->comp_map)
		munmap(u->comp_map, u->comp_len);
	if (u->fd >= 0)
		close(u->fd);
	free(u);
}

static int umem_create(int conn, struct xsk_umem **out, void *area, uint64_t size,
		       struct xsk_ring_prod *fill, struct xsk_ring_cons *comp,
		       const struct xsk_umem_config *cfg)
{
	struct broker_umem *u = calloc(1, sizeof(*u));
	struct xdp_umem_reg reg;
	struct xdp_mmap_offsets off;
	uint32_t none = 0;
	int ret;

	if (!u)
		return -ENOMEM;
	u->fd = -1;
	/* Padding included: newer kernels read a field (tx_metadata_len) where these headers pad. */
	memset(&reg, 0, sizeof(reg));
	reg.addr = (uintptr_t)area;
	reg.len = size;
	reg.chunk_size = cfg->frame_size;
	reg.headroom = cfg->frame_headroom;
	reg.flags = cfg->flags;
	ret = host_broker_xdp_call(conn, HOST_QPN_OP_XSK_SOCKET, &none, -1, &u->fd);
	if (!ret && setsockopt(u->fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof(reg))) {
		ret = -errno;
		if (ret == -ENOBUFS)
			atomic_store(&umem_refused, true);
	}
	if (!ret && (setsockopt(u->fd, SOL_XDP, XDP_UMEM_FILL_RING, &cfg->fill_size,
				sizeof(cfg->fill_size)) ||
		     setsockopt(u->fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &cfg->comp_size,
				sizeof(cfg->comp_size))))
		ret = -errno;
	if (!ret)
		ret = mmap_offsets(u->fd, &off);
	if (!ret)
		ret = ring_map(u->fd, &off.fr, cfg->fill_size, sizeof(uint64_t),
			       XDP_UMEM_PGOFF_FILL_RING, (struct xsk_ring_cons *)fill,
			       &u->fill_map, &u->fill_len);
	if (!ret)
		ret = ring_map(u->fd, &off.cr, cfg->comp_size, sizeof(uint64_t),
			       XDP_UMEM_PGOFF_COMPLETION_RING, comp, &u->comp_map, &u->comp_len);
	if (!ret && !track(u))
		ret = -EMFILE;
	if (ret) {
		umem_free(u);
		return ret;
	}
	/* A producer's free entries: all of them. */
	fill->cached_cons = cfg->fill_size;
	*out = (struct xsk_umem *)u;
	return 0;
}

static void xsk_free(struct broker_xsk *x)
{
	if (x->rx_map)
		munmap(x->rx_map, x->rx_len);
	if (x->tx_map)
		munmap(x->tx_map, x->tx_len);
	if (x->fd >= 0 && x->fd != x->umem->fd)
		close(x->fd);
	else if (x->fd >= 0)
		x->umem->fd_taken = false;
	free(x);
}

static int socket_create(struct xsk_socket **out, const char *ifname, uint32_t queue,
			 struct xsk_umem *umem, struct xsk_ring_cons *rx, struct xsk_ring_prod *tx,
			 const struct xsk_socket_config *cfg)
{
	struct broker_umem *u = (struct broker_umem *)umem;
	struct sockaddr_xdp sxdp = {
		.sxdp_family = AF_XDP, .sxdp_ifindex = if_nametoindex(ifname),
		.sxdp_queue_id = queue, .sxdp_flags = cfg->bind_flags,
	};
	struct broker_xsk *x;
	struct xdp_mmap_offsets off;
	int ret = 0;

	/* One socket per UMEM: the PMD's single queue (queue_count=1). */
	if (u->fd_taken)
		return -EOPNOTSUPP;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->umem = u;
	x->fd = u->fd;
	u->fd_taken = true;
	if (setsockopt(x->fd, SOL_XDP, XDP_RX_RING, &cfg->rx_size, sizeof(cfg->rx_size)) ||
	    setsockopt(x->fd, SOL_XDP, XDP_TX_RING, &cfg->tx_size, sizeof(cfg->tx_size)))
		ret = -errno;
	if (!ret)
		ret = mmap_offsets(x->fd, &off);
	if (!ret)
		ret = ring_map(x->fd, &off.rx, cfg->rx_size, sizeof(struct xdp_desc),
			       XDP_PGOFF_RX_RING, rx, &x->rx_map, &x->rx_len);
	if (!ret)
		ret = ring_map(x->fd, &off.tx, cfg->tx_size, sizeof(struct xdp_desc),
			       XDP_PGOFF_TX_RING, (struct xsk_ring_cons *)tx, &x->tx_map, &x->tx_len);
	if (!ret && bind(x->fd, (struct sockaddr *)&sxdp, sizeof(sxdp)))
		ret = -errno;
	if (!ret && !track(x))
		ret = -EMFILE;
	if (ret) {
		xsk_free(x);
		return ret;
	}
	rx->cached_prod = *rx->producer;
	rx->cached_cons = *rx->consumer;
	tx->cached_prod = *tx->producer;
	tx->cached_cons = *tx->consumer + cfg->tx_size;
	*out = (struct xsk_socket *)x;
	return 0;
}

/* libxdp's functions as the af_xdp PMD calls them: ours while a broker sets up, and for our objects. */
int __real_xsk_umem__create(struct xsk_umem **umem, void *area, uint64_t size,
			    struct xsk_ring_prod *fill, struct xsk_ring_cons *comp,
			    const struct xsk_umem_config *cfg);
int __real_xsk_socket__create(struct xsk_socket **xsk, const char *ifname, uint32_t queue,
			      struct xsk_umem *umem, struct xsk_ring_cons *rx,
			      struct xsk_ring_prod *tx, const struct xsk_socket_config *cfg);
int __real_xsk_socket__fd(const struct xsk_socket *xsk);
void __real_xsk_socket__delete(struct xsk_socket *xsk);
int __real_xsk_umem__delete(struct xsk_umem *umem);

int __wrap_xsk_socket__fd(const struct xsk_socket *xsk)
{
	return ours(xsk, false) ? ((const struct broker_xsk *)xsk)->fd : __real_xsk_socket__fd(xsk);
}

void __wrap_xsk_socket__delete(struct xsk_socket *xsk)
{
	if (ours(xsk, true))
		xsk_free((struct broker_xsk *)xsk);
	else
		__real_xsk_socket__delete(xsk);
}

int __wrap_xsk_umem__delete(struct xsk_umem *umem)
{
	struct broker_umem *u = (struct broker_umem *)umem;

	if (!ours(umem, false))
		return __real_xsk_umem__delete(umem);
	if (u->fd_taken)
		return -EBUSY;
	ours(umem, true);
	umem_free(u);
	return 0;
}

int __wrap_xsk_umem__create(struct xsk_umem **umem, void *area, uint64_t size,
			    struct xsk_ring_prod *fill, struct xsk_ring_cons *comp,
			    const struct xsk_umem_config *cfg)
{
	int conn = dp_xsk_broker();

	if (conn >= 0)
		return umem_create(conn, umem, area, size, fill, comp, cfg);
	return __real_xsk_umem__create(umem, area, size, fill, comp, cfg);
}

int __wrap_xsk_socket__create(struct xsk_socket **xsk, const char *ifname, uint32_t queue,
			      struct xsk_umem *umem, struct xsk_ring_cons *rx,
			      struct xsk_ring_prod *tx, const struct xsk_socket_config *cfg)
{
	if (ours(umem, false))
		return socket_create(xsk, ifname, queue, umem, rx, tx, cfg);
	return __real_xsk_socket__create(xsk, ifname, queue, umem, rx, tx, cfg);
}

/*
 * The af_xdp PMD loads and attaches its XDP program and fills the XSKMAP
 * itself; through a broker the broker has done the first two and does the
 * third, so the object is left unloaded, the program stands for the
 * broker's, and the (unloaded: fd -1) map's update goes to the broker.
 */
int __real_bpf_object__load(struct bpf_object *obj);
int __real_bpf_program__fd(const struct bpf_program *prog);
int __real_bpf_xdp_attach(int ifindex, int prog_fd, uint32_t flags,
			  const struct bpf_xdp_attach_opts *opts);
int __real_bpf_xdp_detach(int ifindex, uint32_t flags, const struct bpf_xdp_attach_opts *opts);
int __real_bpf_map_update_elem(int fd, const void *key, const void *value, uint64_t flags);

int __wrap_bpf_object__load(struct bpf_object *obj)
{
	return dp_xsk_broker() >= 0 ? 0 : __real_bpf_object__load(obj);
}

int __wrap_bpf_program__fd(const struct bpf_program *prog)
{
	int conn = dp_xsk_broker();

	return conn >= 0 ? conn : __real_bpf_program__fd(prog);
}

int __wrap_bpf_xdp_attach(int ifindex, int prog_fd, uint32_t flags,
			  const struct bpf_xdp_attach_opts *opts)
{
	int conn = dp_xsk_broker();

	if (conn >= 0 && prog_fd == conn)
		return 0;
	return __real_bpf_xdp_attach(ifindex, prog_fd, flags, opts);
}

int __wrap_bpf_xdp_detach(int ifindex, uint32_t flags, const struct bpf_xdp_attach_opts *opts)
{
	/* The broker detaches it when our connection closes. */
	if (broker_ifindex_forget(ifindex))
		return 0;
	return __real_bpf_xdp_detach(ifindex, flags, opts);
}

int __wrap_bpf_map_update_elem(int fd, const void *key, const void *value, uint64_t flags)
{
	int conn = dp_xsk_broker();

	if (conn >= 0 && fd < 0) {
		uint32_t queue = *(const uint32_t *)key;
		int ret = host_broker_xdp_call(conn, HOST_QPN_OP_XSK_INSERT, &queue,
					       *(const int *)value, NULL);

		errno = -ret;
		return ret;
	}
	return __real_bpf_map_update_elem(fd, key, value, flags);
}
