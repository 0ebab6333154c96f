/* SPDX-License-Identifier: MIT */
/* The DPDK port: struct port over one ethdev (af_packet, af_xdp, PCI, memif, pcap, tap). */
#ifndef UROCE_DP_PORT_H
#define UROCE_DP_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uroce/config.h"
#include "uroce/dp.h"
#include "uroce/port.h"
#include "host_neigh.h"

#define DP_BURST 32

/*
 * Why the port dropped a frame, before the engine saw it or after it let
 * go of it: name (the counter's, as `uroce stat` shows it) and meaning.
 */
#define DP_DROP_REASONS(X)						\
	X(rx_multiseg,	"received frame spread over several mbufs")	\
	X(rx_looped,	"source MAC is ours: our own frame, or another process's on this netdev, looped back") \
	X(rx_not_for_us, "unicast to another MAC")			\
	X(rx_not_roce,	"not RoCE v2: another protocol or UDP port, multicast, broken or cut short before the BTH") \
	X(rx_icmp_unreach, "ICMP port unreachable quoting UDP 4791: the peer has no RoCE (the requester retries)") \
	X(rx_other_qpn,	"RoCE for a QPN another process owns (dropped silently: no NAK)") \
	X(rx_before_filter, "in the ring before the QPN socket filter was on, dropped unread at open") \
	X(rx_ring_drops, "dropped by the kernel or NIC: receive ring full (PACKET_STATISTICS, imissed)") \
	X(tx_dropped,	"transmit ring still full after three tries")	\
	X(tx_link_down,	"link down or port not started")		\
	X(tx_no_mbuf,	"no mbuf left in the pool")			\
	X(tx_too_big,	"frame larger than the port carries")		\
	X(tx_loop_dropped, "same-host delivery: the owner's ring full, or the owner gone")

enum dp_drop {
#define DP_DROP_ENUM(n, d) DP_DROP_##n,
	DP_DROP_REASONS(DP_DROP_ENUM)
#undef DP_DROP_ENUM
	DP_DROP_COUNT
};

/* Name (the counter's) and one-phrase meaning of a drop reason. */
const char *dp_drop_name(enum dp_drop reason);
const char *dp_drop_desc(enum dp_drop reason);

/*
 * Port counters: frames by fate, each drop reason, and burst occupancy
 * (rx_burst_N counts non-empty receive bursts of N frames, rounded down
 * to a power of two).  rx_neigh: ARP and ND frames handed to the neighbour
 * table.  rx_loop/tx_loop: frames from and to other processes of this host
 * (dp_port_set_ring()); rx_user_loop/tx_user_loop: those of another user's
 * processes, whose rings are closed to us: through the device's broker,
 * which posts them on the netdev, and back from the kernel as they leave.
 * drop[DP_DROP_rx_ring_drops] is read by dp_port_refresh().
 */
#define DP_PORT_COUNTERS(X)						\
	X(rx_frames)	X(rx_bytes)	X(rx_roce)	X(rx_polls)	\
	X(tx_frames)	X(tx_bytes)	X(rx_neigh)	X(rx_loop)	X(tx_loop)	\
	X(rx_raw)	X(rx_user_loop)	X(tx_user_loop)
#define DP_PORT_BURSTS(X)						\
	X(rx_burst_1)	X(rx_burst_2)	X(rx_burst_4)	X(rx_burst_8)	\
	X(rx_burst_16)	X(rx_burst_32)						\
	X(tx_burst_1)	X(tx_burst_2)	X(tx_burst_4)	X(tx_burst_8)	\
	X(tx_burst_16)	X(tx_burst_32)

/* Every member a uint64_t, in the order of dp_port_counter_names[]. */
struct dp_port_counters {
#define DP_PORT_FIELD(n) uint64_t n;
	DP_PORT_COUNTERS(DP_PORT_FIELD)
	uint64_t drop[DP_DROP_COUNT];	/* by enum dp_drop */
	DP_PORT_BURSTS(DP_PORT_FIELD)
#undef DP_PORT_FIELD
};

extern const char *const dp_port_counter_names[];

struct host_qpn_map;
struct dp_port;

/**
 * dp_port_open() - start the EAL if needed and open the device's port.
 * @cfg: the device configuration (the PMD, its netdev or arguments).
 * @qpns: this process's QPNs; received RoCE frames for other QPNs are
 *        dropped silently.  NULL: every QPN is accepted.  A read-only
 *        table gets the broker connection it allocates through.
 *
 * Return: 0, or -errno with one line in @err saying what failed, why and the fix.
 */
int dp_port_open(const struct host_link_cfg *cfg, struct host_qpn_map *qpns,
		 struct dp_port **out, char *err, size_t errlen);

/* The port interface for the engine (its ops run in one thread at a time). */
struct port *dp_port_base(struct dp_port *dp);
void dp_port_close(struct dp_port *dp);

/* Link facts now (MTU is the IP MTU the port carries, PMD limits included). */
void dp_port_link(struct dp_port *dp, struct host_link_info *info);

/*
 * From the progress thread, without the engine lock: re-read the link
 * state and addresses.  Return: bit 0 set if the link went up or down,
 * bit 1 if the addresses changed.
 */
#define DP_PORT_LINK_CHANGED	1u
#define DP_PORT_ADDRS_CHANGED	2u
unsigned dp_port_refresh(struct dp_port *dp);

/*
 * rc_engine_cfg.frame_tap (@arg: the dp_port): frames the engine delivers
 * to itself (same-host traffic) go to UROCE_PCAP as if they had crossed the wire.
 */
void dp_port_capture(void *arg, const void *frame, uint32_t len);

struct host_ring;

/*
 * Same-host delivery between processes (host_ring.h): frames from @loop are
 * received with the port's own (rx_loop), and dp_port_forward() is the
 * engine's rc_engine_cfg.local_forward (@arg: the dp_port), sending to the
 * process that owns the destination QPN (tx_loop, tx_loop_dropped).
 */
void dp_port_set_ring(struct dp_port *dp, struct host_ring *loop);
int dp_port_forward(void *arg, uint32_t dest_qp, const void *frame, uint32_t len);
/*
 * The engine's rc_engine_cfg.direct_peer (@arg: the dp_port): the direct
 * table another process on this netdev publishes for QPN @qpn, mapped from
 * its receive ring, and its PID; NULL for our own QPs and unknown ones.
 */
struct rc_direct_table *dp_port_direct_peer(void *arg, uint32_t qpn, int32_t *pid);
/*
 * A file descriptor that polls readable (POLLIN) while received frames wait
 * for rx_burst: the PMD's own socket (af_packet, af_xdp), found at open.
 * -1 for the other PMDs.  Only for poll(); never read from it.
 */
int dp_port_rx_fd(struct dp_port *dp);

/*
 * Drop, unread, what the port has received so far (rx_before_filter): at
 * open, once the QPN socket filter is on, what came before it was every
 * process's traffic, and the process has no QP yet.
 */
void dp_port_drop_received(struct dp_port *dp);

/* ACKs are waiting for the next flush (the progress thread then runs a pass soon). */
bool dp_port_tx_held(struct dp_port *dp);

/* Write out what UROCE_PCAP has buffered (any thread). */
void dp_port_flush_capture(struct dp_port *dp);

/* Our addresses (GID form) as the port last read them. */
unsigned dp_port_addrs(struct dp_port *dp, uint8_t (*addrs)[16], unsigned max);

/* Counters (a snapshot; the port's thread may be updating them). */
void dp_port_counters(struct dp_port *dp, struct dp_port_counters *out);
void dp_port_neigh_counters(struct dp_port *dp, struct host_neigh_counters *out);

/*
 * The bare ethdev under the port, for a plain-DPDK baseline on the same PMD
 * (uroce-porttest --plain, benchmarks only): frames straight to and from
 * rte_eth_tx_burst()/rte_eth_rx_burst() on queue 0, nothing of the port's
 * receive path in between.  @handle is the mbuf.
 */
int dp_port_raw_alloc(struct dp_port *dp, struct port_frame *f, unsigned n, uint32_t len);
void dp_port_raw_free(struct port_frame *f, unsigned n);
/* Sends what the PMD takes and frees the rest.  Return: frames sent. */
unsigned dp_port_raw_tx(struct dp_port *dp, struct port_frame *f, unsigned n);
unsigned dp_port_raw_rx(struct dp_port *dp, struct port_frame *f, unsigned max);

/* Ifindex of the netdev, 0 where DPDK owns the link. */
int dp_port_ifindex(struct dp_port *dp);

#endif
