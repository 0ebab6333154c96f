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
 * @ppm: out: the loss rate of the uroce XDP program found there (0 if none).
 *
 * A uroce program left by a process that died, or attached by `uroce
 * loss`, is removed (its loss rate is handed back to be set again).
 * Return: 0; -EBUSY with one line in @err when a live process's af_xdp port
 * or a foreign XDP program holds the netdev.
 */
int host_bpf_xdp_claim(const char *netdev, uint32_t *ppm, char *err, size_t errlen);

/* Record @pid as the owner of the uroce XDP program on @netdev, with loss rate @ppm. */
int host_bpf_xdp_set_owner(const char *netdev, uint32_t pid, uint32_t ppm);

/* Loss statistics of the XDP program on @netdev.  Return: 0, -ENOENT if none of ours. */
int host_loss_get(const char *netdev, uint32_t *ppm, uint64_t *seen, uint64_t *dropped);

#endif
