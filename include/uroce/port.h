/* SPDX-License-Identifier: MIT */
/* The port interface: how the transport engine sends and receives Ethernet frames. */
#ifndef UROCE_PORT_H
#define UROCE_PORT_H

#include <stdbool.h>
#include <stdint.h>

/*
 * One Ethernet frame (FCS excluded).  @handle is the backend's buffer (an
 * rte_mbuf for DPDK, a slot for the simulated link); the engine never looks
 * inside it.
 *
 * Zero-copy payload (only between the engine and a port with tx_ext set):
 * when @ext is set, bytes [@ext_off, @ext_off + @ext_len) of the frame are
 * at @ext, in the sender's registered memory, and that span of @data is
 * unwritten; @len still counts the whole frame.
 */
struct port_frame {
	uint8_t		*data;
	uint32_t	len;
	void		*handle;
	const uint8_t	*ext;
	uint32_t	ext_off, ext_len;
};

struct port;

/*
 * Implemented by: the DPDK backend (dataplane/dpdk/dp_port.c), the
 * simulated link (dataplane/ports/port_sim.c) and the pcap port
 * (dataplane/ports/port_pcap.c).  Calls come from one thread at a time (the
 * engine holds its lock), so a backend needs no locking of its own.
 */
struct port_ops {
	/* Up to @max received frames; each stays valid until rx_release(). */
	unsigned (*rx_burst)(struct port *p, struct port_frame *f, unsigned max);
	void (*rx_release)(struct port *p, struct port_frame *f, unsigned n);
	/* A transmit buffer for a frame of @len bytes; f->data is writable. -ENOBUFS if none. */
	int (*tx_alloc)(struct port *p, struct port_frame *f, uint32_t len);
	/* Give up a buffer from tx_alloc() that will not be sent. */
	void (*tx_abort)(struct port *p, struct port_frame *f);
	/*
	 * Queue frames for sending; the port owns them from here on and sends
	 * them by the next flush() at the latest.  A port that cannot send
	 * drops and counts (the transport recovers like any other loss).
	 */
	void (*tx_burst)(struct port *p, struct port_frame *f, unsigned n);
	/*
	 * Send what is queued.  A port may keep a flush of nothing but ACKs for
	 * the next flush (the DPDK port does, so ACKs ride with the next
	 * request); a second flush in a row sends everything (rc_tx_drain()).
	 */
	void (*flush)(struct port *p);
	/*
	 * MAC address for an IP address in GID form (IPv4-mapped or IPv6).
	 * Return: 0 with @mac filled; -EAGAIN while resolution is under way
	 * (call again later); -EHOSTUNREACH when it has failed.
	 */
	int (*resolve)(struct port *p, const uint8_t gid[16], uint8_t mac[6]);
	void (*destroy)(struct port *p);
};

struct port {
	const struct port_ops	*ops;
	uint8_t			mac[6];
	uint32_t		mtu;		/* IP MTU of the link */
	const char		*name;		/* for messages: "af_packet:veth0" */
	/*
	 * tx_burst() takes frames with a zero-copy payload (port_frame.ext) and
	 * rx_burst() sets port_frame.ext on every frame (NULL when contiguous).
	 * The referenced memory must stay put until the frame is delivered: the
	 * engine offers it only for RC requests, whose buffers the application
	 * keeps until their completion, which needs the peer's ACK.
	 */
	bool			tx_ext;
	/*
	 * Set by the engine while flows steer frames to raw packet QPs:
	 * rx_burst() then also hands up frames that are not RoCE (a port that
	 * filters them, as the DPDK port does), for the engine to match.
	 */
	bool			rx_raw;
};

#endif
