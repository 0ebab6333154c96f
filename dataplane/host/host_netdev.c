// SPDX-License-Identifier: MIT
/* Netdev facts from the kernel (ioctl, getifaddrs, sysfs, rtnetlink) and the RoCE GID table. */
#include <errno.h>
#include <ifaddrs.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host_neigh.h"
#include "host_netdev.h"

bool host_pmd_uses_netdev(enum host_pmd pmd)
{
	return pmd == HOST_PMD_AF_PACKET || pmd == HOST_PMD_AF_XDP;
}

int host_netdev_info(const char *ifname, struct host_link_info *info, char *err, size_t errlen)
{
	struct ifreq ifr;
	char path[128];
	FILE *f;
	int fd, ret = 0;

	memset(info, 0, sizeof(*info));
	if (strlen(ifname) >= IF_NAMESIZE) {
		snprintf(err, errlen, "'%s' is not an interface name (at most 15 characters)",
			 ifname);
		return -EINVAL;
	}
	strcpy(info->netdev, ifname);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot query %s: %s", ifname, strerror(-ret));
		return ret;
	}
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, ifname);
	if (ioctl(fd, SIOCGIFINDEX, &ifr)) {
		ret = errno == ENODEV ? -ENODEV : -errno;
		if (ret == -ENODEV)
			snprintf(err, errlen,
				 "no network interface '%s' in this network namespace (see `ip link`)",
				 ifname);
		else
			snprintf(err, errlen, "cannot query %s: %s", ifname, strerror(-ret));
		goto out;
	}
	info->ifindex = ifr.ifr_ifindex;
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) == 0)
		memcpy(info->mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(fd, SIOCGIFMTU, &ifr) == 0)
		info->mtu = (uint32_t)ifr.ifr_mtu;
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0)
		info->up = (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
	snprintf(path, sizeof(path), "/sys/class/net/%s/speed", ifname);
	f = fopen(path, "re");
	if (f) {
		int speed;

		if (fscanf(f, "%d", &speed) == 1 && speed > 0)
			info->speed_mbps = (uint32_t)speed;
		fclose(f);
	}
out:
	close(fd);
	return ret;
}

int host_netdev_addrs(const char *ifname, uint8_t (*addrs)[16], unsigned max)
{
	struct ifaddrs *list, *ifa;
	unsigned n = 0;

	if (getifaddrs(&list))
		return -errno;
	for (int family = AF_INET; family; family = family == AF_INET ? AF_INET6 : 0)
		for (ifa = list; ifa && n < max; ifa = ifa->ifa_next) {
			if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != family ||
			    strcmp(ifa->ifa_name, ifname))
				continue;
			memset(addrs[n], 0, 16);
			if (family == AF_INET) {
				addrs[n][10] = addrs[n][11] = 0xff;
				memcpy(addrs[n] + 12,
				       &((struct sockaddr_in *)ifa->ifa_addr)->sin_addr, 4);
			} else {
				memcpy(addrs[n], &((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr,
				       16);
			}
			n++;
		}
	freeifaddrs(list);
	return (int)n;
}

void host_cfg_mac(const struct host_link_cfg *cfg, uint8_t mac[6])
{
	static const uint8_t zero[6];
	uint32_t h = 2166136261u;

	if (memcmp(cfg->mac, zero, 6)) {
		memcpy(mac, cfg->mac, 6);
		return;
	}
	/* Locally administered, unicast: 02:75:72 ("ur") + a hash of the device name. */
	for (const char *p = cfg->name; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	mac[0] = 0x02;
	mac[1] = 0x75;
	mac[2] = 0x72;
	mac[3] = (uint8_t)(h >> 16);
	mac[4] = (uint8_t)(h >> 8);
	mac[5] = (uint8_t)h;
}

int host_link_query(const struct host_link_cfg *cfg, struct host_link_info *info, char *err,
		  size_t errlen)
{
	int ret;

	if (host_pmd_uses_netdev(cfg->pmd)) {
		ret = host_netdev_info(cfg->netdev, info, err, errlen);
		if (ret)
			return ret;
		if (cfg->mtu && cfg->mtu < info->mtu)
			info->mtu = cfg->mtu;
		return 0;
	}
	memset(info, 0, sizeof(*info));
	snprintf(info->netdev, sizeof(info->netdev), "%s", cfg->netdev);
	host_cfg_mac(cfg, info->mac);
	info->mtu = cfg->mtu ? cfg->mtu : 1500;
	info->up = true;
	return 0;
}

static bool is_link_local(const uint8_t a[16])
{
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

static unsigned add_pair(struct wire_gid_entry *tbl, unsigned n, unsigned max, const uint8_t gid[16])
{
	for (unsigned i = 0; i < n; i++)
		if (!memcmp(tbl[i].gid, gid, 16))
			return n;
	for (int type = WIRE_GID_ROCE_V1; type <= WIRE_GID_ROCE_V2 && n < max; type++, n++) {
		tbl[n].valid = true;
		memcpy(tbl[n].gid, gid, 16);
		tbl[n].type = (enum wire_gid_type)type;
	}
	return n;
}

int host_gid_table(const struct host_link_cfg *cfg, struct wire_gid_entry *tbl, unsigned max,
		 char *err, size_t errlen)
{
	uint8_t addrs[HOST_MAX_ADDRS * 4][16], ll[16];
	struct host_link_info info;
	unsigned n = 0;
	int n_addrs, ret;

	ret = host_link_query(cfg, &info, err, errlen);
	if (ret)
		return ret;
	if (host_pmd_uses_netdev(cfg->pmd)) {
		n_addrs = host_netdev_addrs(cfg->netdev, addrs, HOST_MAX_ADDRS * 4);
		if (n_addrs < 0) {
			snprintf(err, errlen, "cannot list the addresses of %s: %s", cfg->netdev,
				 strerror(-n_addrs));
			return n_addrs;
		}
	} else {
		n_addrs = (int)cfg->n_addrs;
		memcpy(addrs, cfg->addrs, (size_t)n_addrs * 16);
	}
	memset(tbl, 0, max * sizeof(*tbl));
	/* The default GID first, as the kernel's RoCE GID management does. */
	host_link_local_gid(info.mac, ll);
	n = add_pair(tbl, n, max, ll);
	for (int i = 0; i < n_addrs; i++)
		if (wire_gid_is_v4mapped(addrs[i]))
			n = add_pair(tbl, n, max, addrs[i]);
	for (int i = 0; i < n_addrs; i++)
		if (!wire_gid_is_v4mapped(addrs[i]) && !is_link_local(addrs[i]))
			n = add_pair(tbl, n, max, addrs[i]);
	return (int)n;
}

int host_netdev_watch_open(void)
{
	struct sockaddr_nl sa = {
		.nl_family = AF_NETLINK,
		.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR,
	};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	return fd;
}

bool host_netdev_watch_poll(int fd, int ifindex)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct nlmsghdr))));
	bool changed = false;
	ssize_t len;

	while ((len = recv(fd, buf, sizeof(buf), 0)) > 0 || (len < 0 && errno == ENOBUFS)) {
		if (len < 0) {	/* overrun: events were lost, assume ours was among them */
			changed = true;
			continue;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len);
		     h = NLMSG_NEXT(h, len)) {
			int idx = -1;

			if (h->nlmsg_type == RTM_NEWLINK || h->nlmsg_type == RTM_DELLINK)
				idx = ((struct ifinfomsg *)NLMSG_DATA(h))->ifi_index;
			else if (h->nlmsg_type == RTM_NEWADDR || h->nlmsg_type == RTM_DELADDR)
				idx = (int)((struct ifaddrmsg *)NLMSG_DATA(h))->ifa_index;
			if (idx >= 0 && (ifindex == 0 || idx == ifindex))
				changed = true;
		}
	}
	return changed;
}

/*
 * Classic BPF: untagged ARP, or IPv6 whose first next header is ICMPv6 with
 * type 135/136 (RFC 4861 4.3/4.4; ND messages carry no extension headers).
 */
static const struct sock_filter neigh_tap_code[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_VLAN_TAG_PRESENT)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 8),
	BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_ARP, 7, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IPV6, 0, 5),
	BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 14 + 6),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_ICMPV6, 0, 3),
	BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 14 + 40),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 135, 2, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 136, 1, 0),
	BPF_STMT(BPF_RET | BPF_K, 0),
	BPF_STMT(BPF_RET | BPF_K, 0xffff),
};

int host_netdev_neigh_tap_open(int ifindex)
{
	struct sock_fprog prog = {
		.len = sizeof(neigh_tap_code) / sizeof(neigh_tap_code[0]),
		.filter = (struct sock_filter *)neigh_tap_code,
	};
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
		.sll_ifindex = ifindex,
	};
	int one = 1, ret;
	/* Protocol 0 receives nothing until bound: the filter is in place before the first frame. */
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) ||
	    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

unsigned host_netdev_neigh_tap_drain(int fd, struct host_neigh *n, const uint8_t mac[6], uint64_t now)
{
	uint8_t frame[1024];
	unsigned count = 0;
	ssize_t len;

	/* Longer ND messages are cut to the buffer: host_neigh_input() then finds them malformed. */
	while ((len = recv(fd, frame, sizeof(frame), 0)) > 0) {
		count++;
		if (len >= 14 && memcmp(frame + 6, mac, 6))
			host_neigh_input(n, frame, (uint32_t)len, now);
	}
	return count;
}
