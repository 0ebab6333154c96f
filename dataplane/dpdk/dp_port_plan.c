// SPDX-License-Identifier: MIT
/* Planning a DPDK port before it opens: vdev arguments per PMD, buffer and queue sizes, capabilities. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <fcntl.h>
#include <unistd.h>

#include <rte_mbuf.h>

#include "uroce/host.h"
#include "host_bpf.h"
#include "dp_port_plan.h"

/* struct tpacket2_hdr + sockaddr_ll, aligned, + 16: where the kernel puts the MAC header. */
#define TPACKET2_MAC_OFF	66
/*
 * Ring frames: 4096 hold what 4 QPs with 16 RDMA reads of 64 KiB each in
 * flight send back at once; fewer made read responses overflow the ring.
 */
#define AF_PACKET_FRAMES	4096
/* Largest RoCE v2 frame: Ethernet + VLAN + IPv6 + UDP + BTH + AtomicETH + 4096 + pad + ICRC. */
#define ROCE_MAX_FRAME		(14 + 4 + 40 + 8 + 12 + 28 + 4096 + 3 + 4)
/* AF_XDP chunk = mempool object <= one page: 64 header + 128 mbuf + 3840 data room. */
#define AF_XDP_DATA_ROOM	3840
#define AF_XDP_POOL_SIZE	8192
/* Within RLIMIT_MEMLOCK's default 8 MiB: 2496-byte chunks (frames to 1920 bytes), 3072 of them. */
#define AF_XDP_COMPACT_DATA_ROOM	2304
#define AF_XDP_COMPACT_POOL_SIZE	3072
#define XDP_HEADROOM		256
#define POOL_SIZE		4096
#define RING_DESCS		1024

static uint32_t align_up(uint32_t x, uint32_t a)
{
	return (x + a - 1) / a * a;
}

static uint32_t lcm(uint32_t a, uint32_t b)
{
	uint32_t x = a, y = b;

	while (y) {
		uint32_t t = x % y;

		x = y;
		y = t;
	}
	return (uint32_t)((uint64_t)a / x * b);
}

static uint32_t next_pow2(uint32_t x)
{
	uint32_t p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

/* pmd_args "k=v,k=v" with every key also known to us rewritten ("rx=" -> "rx_pcap="). */
static int append_pmd_args(char *buf, size_t len, const char *pmd_args, enum host_pmd pmd)
{
	char args[sizeof(((struct host_link_cfg *)0)->pmd_args)];
	char *save = NULL;
	size_t used = strlen(buf);

	snprintf(args, sizeof(args), "%s", pmd_args);
	for (char *kv = strtok_r(args, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		const char *prefix = "";
		int n;

		if (pmd == HOST_PMD_PCAP && (!strncmp(kv, "rx=", 3) || !strncmp(kv, "tx=", 3)))
			prefix = "_pcap";
		if (*prefix) {
			n = snprintf(buf + used, len - used, "%s%.2s%s%s", used ? "," : "", kv,
				     prefix, kv + 2);
		} else {
			n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", kv);
		}
		if (n < 0 || (size_t)n >= len - used)
			return -E2BIG;
		used += (size_t)n;
	}
	return 0;
}

/*
 * A memif server binds RUN_DIR/memif-LINK.sock.  A server that died left the
 * file behind and the next bind fails; remove it when nobody answers on it.
 */
static int memif_clear_stale_socket(const struct host_link_cfg *cfg, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, ret;

	if (strstr(cfg->pmd_args, "role=client"))
		return 0;
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/memif-%s.sock", host_run_dir(),
		     cfg->netdev) >= (int)sizeof(sa.sun_path)) {
		snprintf(err, errlen, "%s: the memif socket path is too long (run directory %s)",
			 cfg->name, host_run_dir());
		return -ENAMETOOLONG;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (ret && errno == ECONNREFUSED)
		unlink(sa.sun_path);
	close(fd);
	if (ret == 0) {
		snprintf(err, errlen, "%s: another process already serves memif link %s (%s)",
			 cfg->name, cfg->netdev, sa.sun_path);
		return -EADDRINUSE;
	}
	return 0;
}

int dp_pmd_plan(const struct host_link_cfg *cfg, const uint8_t mac_addr[6], uint32_t mtu,
		struct dp_pmd_plan *pl, char *err, size_t errlen)
{
	uint32_t frame = mtu + DP_ETH_OVERHEAD;
	char mac[32];
	int ret = 0;

	memset(pl, 0, sizeof(*pl));
	pl->xdp_prog_fd = -1;
	pl->pool_size = POOL_SIZE;
	pl->ring_descs = RING_DESCS;
	pl->data_room = RTE_PKTMBUF_HEADROOM + align_up(frame, 64);
	pl->max_frame = frame;
	snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", mac_addr[0],
		 mac_addr[1], mac_addr[2], mac_addr[3], mac_addr[4],
		 mac_addr[5]);
	switch (cfg->pmd) {
	case HOST_PMD_AF_PACKET: {
		/*
		 * The kernel cuts a frame at framesz - TPACKET2_MAC_OFF; DPDK's
		 * receive copies a whole ring frame into one mbuf.  Both follow
		 * the MTU (the PMD's 2 KiB default silently truncates more), up
		 * to the largest RoCE frame: a jumbo MTU needs no bigger slots,
		 * and smaller slots mean more of them in the same memory.  DPDK
		 * addresses ring frames as i * framesz, so a block must hold a
		 * whole number of frames: blocksz = lcm(framesz, page).
		 */
		uint32_t rframe = frame < ROCE_MAX_FRAME ? frame : ROCE_MAX_FRAME;
		uint32_t framesz = align_up(TPACKET2_MAC_OFF + rframe + 16, 128);
		uint32_t page = (uint32_t)getpagesize();
		uint32_t blocksz = lcm(framesz, page), per_block, framecnt;

		if (blocksz > (4u << 20)) {
			framesz = next_pow2(framesz);
			blocksz = framesz > page ? framesz : page;
		}
		per_block = blocksz / framesz;
		framecnt = (AF_PACKET_FRAMES + per_block - 1) / per_block * per_block;
		pl->driver = "net_af_packet";
		pl->uses_netdev = true;
		pl->data_room = RTE_PKTMBUF_HEADROOM + framesz;
		pl->max_frame = framesz - TPACKET2_MAC_OFF - 16;
		snprintf(pl->args, sizeof(pl->args),
			 "iface=%s,qpairs=1,blocksz=%u,framesz=%u,framecnt=%u", cfg->netdev,
			 blocksz, framesz, framecnt);
		break;
	}
	case HOST_PMD_AF_XDP:
		/*
		 * Zero-copy UMEM over the mempool: an mbuf must fit one 4 KiB
		 * chunk, so frames stop at 3456 bytes (IP MTU 3438 with a VLAN
		 * tag; veth refuses XDP above MTU 3506 anyway).  busy_budget=0:
		 * preferred busy polling only costs on veth.
		 */
		pl->driver = "net_af_xdp";
		pl->uses_netdev = true;
		pl->packed_pool = true;
		pl->data_room = AF_XDP_DATA_ROOM;
		pl->pool_size = AF_XDP_POOL_SIZE;
		pl->max_frame = AF_XDP_DATA_ROOM - RTE_PKTMBUF_HEADROOM - XDP_HEADROOM;
		ret = host_bpf_xdp_object_fd();
		if (ret < 0) {
			snprintf(err, errlen, "%s: cannot stage the XDP program: %s", cfg->name,
				 strerror(-ret));
			return ret;
		}
		pl->xdp_prog_fd = ret;
		ret = 0;
		snprintf(pl->args, sizeof(pl->args),
			 "iface=%s,start_queue=0,queue_count=1,busy_budget=0,xdp_prog=/proc/self/fd/%d",
			 cfg->netdev, pl->xdp_prog_fd);
		break;
	case HOST_PMD_MEMIF: {
		uint32_t bsize = align_up(frame, 128);

		ret = memif_clear_stale_socket(cfg, err, errlen);
		if (ret)
			return ret;

		pl->driver = "net_memif";
		if (bsize < 2048)
			bsize = 2048;
		/* A socket file, not an abstract one: abstract sockets stop at netns borders. */
		snprintf(pl->args, sizeof(pl->args),
			 "id=0,socket=%s/memif-%s.sock,socket-abstract=no,bsize=%u,rsize=10,mac=%s",
			 host_run_dir(), cfg->netdev, bsize, mac);
		break;
	}
	case HOST_PMD_PCAP:
		pl->driver = "net_pcap";
		break;
	case HOST_PMD_TAP:
		pl->driver = "net_tap";
		snprintf(pl->args, sizeof(pl->args), "iface=%s,mac=%s", cfg->netdev, mac);
		break;
	case HOST_PMD_PCI:
		pl->driver = NULL;
		break;
	}
	if (cfg->pmd != HOST_PMD_PCI)
		ret = append_pmd_args(pl->args, sizeof(pl->args), cfg->pmd_args, cfg->pmd);
	if (ret)
		snprintf(err, errlen, "%s: pmd_args too long", cfg->name);
	return ret;
}

const char *dp_pmd_fix(enum host_pmd pmd)
{
	switch (pmd) {
	case HOST_PMD_AF_XDP:
		return "the netdev may already run an XDP program (`ip link show`; `uroce loss IFACE off`), or hold another AF_XDP socket on queue 0";
	case HOST_PMD_PCAP:
		return "check pmd_args (rx=FILE,tx=FILE: the rx file must exist and be a pcap)";
	case HOST_PMD_MEMIF:
		return "check pmd_args (role=server|client) and that the socket directory exists";
	case HOST_PMD_TAP:
		return "check that /dev/net/tun exists and the interface name is free";
	default:
		return "set UROCE_DEBUG=1 to see DPDK's log";
	}
}

/* Is capability @cap (linux/capability.h numbering) in this process's effective set? */
static bool has_cap(unsigned cap)
{
	unsigned long long eff = 0;
	char line[128];
	bool found = false;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return true;	/* cannot tell: let the kernel decide */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			found = true;
			break;
		}
	fclose(f);
	return !found || (eff >> cap & 1);
}

#define CAP_NET_ADMIN_NUM	12
#define CAP_NET_RAW_NUM		13
#define CAP_SYS_ADMIN_NUM	21
#define CAP_BPF_NUM		39
#define CAP_IPC_LOCK_NUM	14

static uint64_t umem_bytes(unsigned pool_size, uint32_t data_room)
{
	return (uint64_t)pool_size *
	       rte_mempool_calc_obj_size((uint32_t)sizeof(struct rte_mbuf) + data_room, 0, NULL);
}

uint64_t dp_pmd_umem_bytes(const struct dp_pmd_plan *pl)
{
	return umem_bytes(pl->pool_size, pl->data_room);
}

int dp_pmd_plan_memlock(const struct host_link_cfg *cfg, struct dp_pmd_plan *pl, char *err,
			size_t errlen)
{
	uint64_t page = (uint64_t)getpagesize(), compact;
	struct rlimit lim;

	if (has_cap(CAP_IPC_LOCK_NUM) || getrlimit(RLIMIT_MEMLOCK, &lim) ||
	    lim.rlim_cur == RLIM_INFINITY ||
	    lim.rlim_cur >= umem_bytes(pl->pool_size, pl->data_room) + page)
		return 0;
	compact = umem_bytes(AF_XDP_COMPACT_POOL_SIZE, AF_XDP_COMPACT_DATA_ROOM);
	if (lim.rlim_cur >= compact + page) {
		pl->data_room = AF_XDP_COMPACT_DATA_ROOM;
		pl->pool_size = AF_XDP_COMPACT_POOL_SIZE;
		pl->max_frame = AF_XDP_COMPACT_DATA_ROOM - RTE_PKTMBUF_HEADROOM - XDP_HEADROOM;
		return 0;
	}
	snprintf(err, errlen,
		 "%s: af_xdp locks at least %llu KiB of packet buffers, and without CAP_IPC_LOCK they count against RLIMIT_MEMLOCK, %llu KiB here: raise it (`@rdma - memlock unlimited` in /etc/security/limits.conf), or use af_packet",
		 cfg->name, (unsigned long long)((compact + page) >> 10),
		 (unsigned long long)(lim.rlim_cur >> 10));
	return -ENOBUFS;
}

/*
 * Asked of the kernel, not of CapEff: in a user namespace (a container) a
 * process may hold CAP_NET_RAW that does not count in the network
 * namespace it runs in.  Protocol 0: the socket never receives a frame.
 */
static bool may_open_packet_socket(void)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int dp_pmd_check_caps(const struct host_link_cfg *cfg, int *handover, int *broker, char *err,
		      size_t errlen)
{
	bool raw = (cfg->pmd != HOST_PMD_AF_PACKET && cfg->pmd != HOST_PMD_AF_XDP) ||
		   may_open_packet_socket();
	const char *need = NULL, *setcap = NULL;

	*handover = -1;
	*broker = -1;
	if (cfg->pmd == HOST_PMD_AF_XDP && raw)
		raw = has_cap(CAP_NET_ADMIN_NUM) && (has_cap(CAP_BPF_NUM) || has_cap(CAP_SYS_ADMIN_NUM));
	if (!raw) {
		int fd = host_broker_fetch(cfg, broker, err, errlen);

		if (fd >= 0 || fd != -ENOENT) {
			*handover = fd;
			return fd >= 0 ? 0 : fd;
		}
	}
	switch (cfg->pmd) {
	case HOST_PMD_AF_PACKET:
		/* NET_ADMIN too: ethdev start restores the promiscuous flag by ioctl. */
		if (!raw || !has_cap(CAP_NET_ADMIN_NUM)) {
			need = "CAP_NET_RAW and CAP_NET_ADMIN";
			setcap = "cap_net_raw,cap_net_admin+ep";
		}
		break;
	case HOST_PMD_AF_XDP:
		if (!has_cap(CAP_NET_RAW_NUM) || !has_cap(CAP_NET_ADMIN_NUM) ||
		    (!has_cap(CAP_BPF_NUM) && !has_cap(CAP_SYS_ADMIN_NUM))) {
			need = "CAP_NET_RAW, CAP_NET_ADMIN and CAP_BPF";
			setcap = "cap_net_raw,cap_net_admin,cap_bpf+ep";
		}
		break;
	case HOST_PMD_TAP:
		if (!has_cap(CAP_NET_ADMIN_NUM)) {
			need = "CAP_NET_ADMIN";
			setcap = "cap_net_admin+ep";
		}
		break;
	default:
		break;
	}
	if (!need)
		return 0;
	snprintf(err, errlen, "%s: %s on %s needs %s: run as root, or `setcap %s PROGRAM`%s",
		 cfg->name, host_pmd_name(cfg->pmd), cfg->netdev, need, setcap,
		 cfg->pmd == HOST_PMD_AF_PACKET || cfg->pmd == HOST_PMD_AF_XDP ?
		 ", or have root create the device with `uroce link add` (its broker lets any user open it)" :
		 "");
	return -EPERM;
}

static atomic_int handover_fd = -1;

void dp_pmd_handover(int fd)
{
	atomic_store(&handover_fd, fd);
}

int __real_socket(int domain, int type, int protocol);
void *__real_mmap64(void *addr, size_t len, int prot, int flags, int fd, long off);
int __real_ioctl(int fd, unsigned long req, ...);

int __wrap_socket(int domain, int type, int protocol)
{
	int fd = atomic_load(&handover_fd);

	if (domain == AF_PACKET && fd >= 0)
		return fcntl(fd, F_DUPFD_CLOEXEC, 0);
	return __real_socket(domain, type, protocol);
}

static bool is_packet_socket(int fd)
{
	int domain = 0;
	socklen_t len = sizeof(domain);

	return !getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) && domain == AF_PACKET;
}

void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, long off)
{
	void *p = __real_mmap64(addr, len, prot, flags, fd, off);

	if (p == MAP_FAILED && errno == EAGAIN && (flags & MAP_LOCKED) &&
	    atomic_load(&handover_fd) >= 0 && is_packet_socket(fd))
		p = __real_mmap64(addr, len, prot, flags & ~MAP_LOCKED, fd, off);
	return p;
}

/* Would this SIOCSIFFLAGS or SIOCSIFHWADDR leave the netdev as it is? */
static bool ioctl_changes_nothing(int fd, unsigned long req, const struct ifreq *want)
{
	struct ifreq cur = *want;

	if (req == SIOCSIFFLAGS)
		return !__real_ioctl(fd, SIOCGIFFLAGS, &cur) && cur.ifr_flags == want->ifr_flags;
	return !__real_ioctl(fd, SIOCGIFHWADDR, &cur) &&
	       !memcmp(cur.ifr_hwaddr.sa_data, want->ifr_hwaddr.sa_data, 6);
}

int __wrap_ioctl(int fd, unsigned long req, void *arg)
{
	if ((atomic_load(&handover_fd) >= 0 || dp_xsk_broker() >= 0) &&
	    (req == SIOCSIFFLAGS || req == SIOCSIFHWADDR) &&
	    ioctl_changes_nothing(fd, req, arg))
		return 0;
	return __real_ioctl(fd, req, arg);
}
