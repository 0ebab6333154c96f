/* SPDX-License-Identifier: MIT */
/* What the interop test programs share: an AF_PACKET link on the host end, TAP output, time. */
#ifndef UROCE_INTEROP_PROBE_LINK_H
#define UROCE_INTEROP_PROBE_LINK_H

#include <stdbool.h>
#include <stdint.h>

struct probe_link {
	int fd;			/* AF_PACKET on the interface, our own frames not looped back */
	int sink_fd;		/* UDP 4791: keeps the host stack from answering ICMP unreachable */
	int ifindex;
	uint8_t mac[6];
	uint8_t gid[16];	/* IPv4-mapped local address, or the interface's link-local IPv6 */
	uint8_t ip_version;
};

/**
 * probe_link_open() - packet socket on @ifname with a 64 MiB receive buffer.
 * @ip_version: 4 (GID from @local_ip) or 6 (GID = the interface's fe80:: address).
 * Return: 0, or -1 with a message on stderr.
 */
int probe_link_open(struct probe_link *l, const char *ifname, const char *local_ip,
		    uint8_t ip_version);

/* Send one frame to @dst_mac; 0 or -1 (errno set). */
int probe_link_send(const struct probe_link *l, const uint8_t dst_mac[6], const void *frame,
		    uint32_t len);

/* Frames the kernel dropped because the socket was full (PACKET_STATISTICS), -1 on error. */
long probe_link_drops(const struct probe_link *l);

/* A frame sent to UDP port 4791, whatever else is in it. */
bool probe_looks_roce(const uint8_t *f, uint32_t len);

/* "aa:bb:cc:dd:ee:ff"; 0 or -1. */
int probe_parse_mac(const char *s, uint8_t mac[6]);

/* CLOCK_MONOTONIC in seconds. */
double probe_now(void);

/* One TAP line per check ("ok N - ..." / "not ok N - ..."), comments as "# ...". */
struct probe_tap {
	unsigned checks, failures;
};

__attribute__((format(printf, 3, 4)))
bool probe_check(struct probe_tap *t, bool ok, const char *fmt, ...);
__attribute__((format(printf, 1, 2)))
void probe_note(const char *fmt, ...);
/* The closing lines: "1..N" and "# P passed, F failed"; returns the exit status. */
int probe_tap_end(const struct probe_tap *t);

#endif
