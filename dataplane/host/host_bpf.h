/* SPDX-License-Identifier: MIT */
/* The BPF programs uroce puts on netdevs (tc ingress filter, XDP) and their loader. */
#ifndef UROCE_HOST_BPF_H
#define UROCE_HOST_BPF_H

#include <stddef.h>
#include <stdint.h>

/* Compiled objects, embedded at build time (dataplane/host/bpf/embed.py). */
extern const unsigned char host_bpf_tc_ingress_obj[];
extern const size_t host_bpf_tc_ingress_obj_len;
extern const unsigned char host_bpf_xdp_obj[];
extern const size_t host_bpf_xdp_obj_len;
extern const unsigned char host_bpf_qpn_filter_obj[];
extern const size_t host_bpf_qpn_filter_obj_len;

/* tc filter identity on the clsact ingress hook: ours to replace and remove. */
#define DP_TC_HANDLE	0x4791
#define DP_TC_PRIORITY	0x4791

/*
 * The XDP object in a memfd, for DPDK's af_xdp xdp_prog=/proc/self/fd/N.
 * Return: the fd (caller closes it), or -errno.
 */
int host_bpf_xdp_object_fd(void);

/**
 * host_bpf_xdp_claim() - make room for an af_xdp port's XDP program on @netdev.
 * @pid: the process the port is for (its own program counts as free).
 * @ppm: out: the loss rate of the uroce XDP program found there (0 if none).
 * @holder: out, with -EBUSY: the live process that holds the netdev, 0 for a
 *          foreign XDP program.
 *
 * A uroce program left by a process that died, or attached by `uroce
 * loss`, is removed (its loss rate is handed back to be set again).
 * Return: 0; -EBUSY with one line in @err when a live process's af_xdp port
 * or a foreign XDP program holds the netdev.
 */
int host_bpf_xdp_claim(const char *netdev, uint32_t pid, uint32_t *ppm, uint32_t *holder,
		       char *err, size_t errlen);

/*
 * The broker's part of an unprivileged af_xdp port: claim @netdev for @pid
 * and attach uroce's XDP program there, owned by @pid, with loss rate kept.
 * Return: the program's XSKMAP (the caller inserts @pid's sockets and closes
 * it), or -errno (-EBUSY: @holder as for host_bpf_xdp_claim()).
 */
int host_bpf_xdp_attach_for(const char *netdev, uint32_t pid, uint32_t *holder);

/* Detach uroce's XDP program from @netdev if @pid owns it (the broker's client left). */
void host_bpf_xdp_detach_for(const char *netdev, uint32_t pid);

/* Record @pid as the owner of the uroce XDP program on @netdev, with loss rate @ppm. */
int host_bpf_xdp_set_owner(const char *netdev, uint32_t pid, uint32_t ppm);

/*
 * The QPN socket filter of a process's packet socket (bpf/uroce_qpn_filter.bpf.c):
 * RoCE frames for another process's QPs stay out of its ring.  @bits is the
 * filter's bitmap, mapped here: bit (qpn - HOST_QPN_BASE) set lets that
 * QPN's frames in (host_qpn_filter_bits() keeps it).
 */
struct host_qpn_filter {
	int		prog_fd;
	uint64_t	*bits;
	void		*mem;	/* the map's value, mapped: a header, then @bits */
	size_t		len;
};

/* Load the program and map its bitmap (all clear).  Return: 0, or -errno with one line in @err. */
int host_qpn_filter_load(struct host_qpn_filter *f, char *err, size_t errlen);
/*
 * For the broker's socket, whose holder may be any user: frames of @ifindex
 * only, unicast to @mac or multicast, and only RoCE, ARP, ICMP and ICMPv6.
 * Set before attaching.
 */
void host_qpn_filter_strict(struct host_qpn_filter *f, int ifindex, const uint8_t mac[6]);
/* Attach it to packet socket @sock.  Return: 0, or -errno (a locked filter: -EPERM). */
int host_qpn_filter_attach(struct host_qpn_filter *f, int sock, char *err, size_t errlen);
/* Our program fd and mapping go (if loaded); a socket it is attached to keeps filtering. */
void host_qpn_filter_close(struct host_qpn_filter *f);

#endif
