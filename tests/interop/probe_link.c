// SPDX-License-Identifier: MIT
/* What the interop test programs share: an AF_PACKET link on the host end, TAP output, time. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "probe_link.h"
#include "uroce/wire.h"

/* The fe80::/10 address of an interface: our GID for RoCE v2 over IPv6. */
static int link_local_gid(const char *ifname, uint8_t gid[16])
{
	struct ifaddrs *all, *a;
	int rc = -1;

	if (getifaddrs(&all))
		return -1;
	for (a = all; a; a = a->ifa_next) {
		const struct sockaddr_in6 *sa = (const void *)a->ifa_addr;

		if (sa && sa->sin6_family == AF_INET6 && !strcmp(a->ifa_name, ifname) &&
		    IN6_IS_ADDR_LINKLOCAL(&sa->sin6_addr)) {
			memcpy(gid, &sa->sin6_addr, 16);
			rc = 0;
			break;
		}
	}
	freeifaddrs(all);
	return rc;
}

int probe_link_open(struct probe_link *l, const char *ifname, const char *local_ip,
		    uint8_t ip_version)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	struct sockaddr_in sink = { .sin_family = AF_INET, .sin_port = htons(WIRE_ROCEV2_PORT) };
	struct ifreq ifr = { 0 };
	int one = 1, rcvbuf = 64 << 20;

	l->ip_version = ip_version;
	l->fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (l->fd < 0) {
		perror("interop: AF_PACKET socket (needs root)");
		return -1;
	}
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(l->fd, SIOCGIFINDEX, &ifr) < 0) {
		fprintf(stderr, "interop: no interface %s in this network namespace\n", ifname);
		return -1;
	}
	l->ifindex = ifr.ifr_ifindex;
	if (ioctl(l->fd, SIOCGIFHWADDR, &ifr) < 0) {
		perror("interop: SIOCGIFHWADDR");
		return -1;
	}
	memcpy(l->mac, ifr.ifr_hwaddr.sa_data, 6);
	sll.sll_ifindex = l->ifindex;
	if (bind(l->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		perror("interop: bind AF_PACKET");
		return -1;
	}
	if (setsockopt(l->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) < 0) {
		perror("interop: PACKET_IGNORE_OUTGOING");
		return -1;
	}
	/* rxe sends bursts of 4 KiB frames while we may be descheduled (qemu TCG load) */
	if (setsockopt(l->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0) {
		perror("interop: SO_RCVBUFFORCE");
		return -1;
	}

	if (inet_pton(AF_INET, local_ip, &sink.sin_addr) != 1) {
		fprintf(stderr, "interop: bad local address %s\n", local_ip);
		return -1;
	}
	if (ip_version == 6) {
		if (link_local_gid(ifname, l->gid)) {
			fprintf(stderr, "interop: %s has no IPv6 link-local address\n", ifname);
			return -1;
		}
	} else {
		memset(l->gid, 0, 10);
		l->gid[10] = l->gid[11] = 0xff;
		memcpy(l->gid + 12, &sink.sin_addr, 4);
	}
	l->sink_fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (l->sink_fd < 0 || bind(l->sink_fd, (struct sockaddr *)&sink, sizeof(sink)) < 0) {
		perror("interop: bind UDP 4791");
		return -1;
	}
	return 0;
}

int probe_link_send(const struct probe_link *l, const uint8_t dst_mac[6], const void *frame,
		    uint32_t len)
{
	struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_ifindex = l->ifindex,
				  .sll_halen = 6 };

	memcpy(to.sll_addr, dst_mac, 6);
	return sendto(l->fd, frame, len, 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)len ?
	       0 : -1;
}

long probe_link_drops(const struct probe_link *l)
{
	struct tpacket_stats st = { 0 };
	socklen_t len = sizeof(st);

	if (getsockopt(l->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) < 0)
		return -1;
	return st.tp_drops;
}

bool probe_looks_roce(const uint8_t *f, uint32_t len)
{
	uint32_t l4;

	if (len < 14 + 20 + 8)
		return false;
	if (f[12] == 0x08 && f[13] == 0x00) {
		if (f[14 + 9] != WIRE_IPPROTO_UDP)
			return false;
		l4 = 14 + (f[14] & 0xfu) * 4;
	} else if (f[12] == 0x86 && f[13] == 0xdd) {
		if (len < 14 + 40 + 8 || f[14 + 6] != WIRE_IPPROTO_UDP)
			return false;
		l4 = 14 + 40;
	} else {
		return false;
	}
	return l4 + 4 <= len && (f[l4 + 2] << 8 | f[l4 + 3]) == WIRE_ROCEV2_PORT;
}

int probe_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned m[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)m[i];
	return 0;
}

double probe_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

bool probe_check(struct probe_tap *t, bool ok, const char *fmt, ...)
{
	va_list ap;

	t->checks++;
	if (!ok)
		t->failures++;
	printf("%s %u - ", ok ? "ok" : "not ok", t->checks);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	return ok;
}

void probe_note(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

int probe_tap_end(const struct probe_tap *t)
{
	printf("1..%u\n", t->checks);
	printf("# %u passed, %u failed\n", t->checks - t->failures, t->failures);
	return t->failures ? 1 : 0;
}
