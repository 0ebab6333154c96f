// SPDX-License-Identifier: MIT
/* The RoCE GID table of a netdev, built from its addresses the way the kernel's RoCE GID cache does. */
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <string.h>

#include "uroce/sysfs.h"

static const uint8_t v4mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

struct gid_fill {
	struct rc_gid_entry	*tbl;
	unsigned		n, used;
};

static bool gid_present(const struct gid_fill *f, const uint8_t gid[16])
{
	for (unsigned i = 0; i < f->used; i++)
		if (!memcmp(f->tbl[i].gid, gid, 16))
			return true;
	return false;
}

/* One address gives a RoCE v1 and a RoCE v2 entry (the kernel adds one per GID type). */
static void gid_add(struct gid_fill *f, const uint8_t gid[16])
{
	if (gid_present(f, gid))
		return;
	for (int type = RC_GID_ROCE_V1; type <= RC_GID_ROCE_V2 && f->used < f->n; type++) {
		struct rc_gid_entry *e = &f->tbl[f->used++];

		e->valid = true;
		memcpy(e->gid, gid, 16);
		e->type = (enum rc_gid_type)type;
	}
}

static bool is_v4mapped(const uint8_t gid[16])
{
	return !memcmp(gid, v4mapped_prefix, sizeof(v4mapped_prefix));
}

int prov_gid_table_build(const char *netdev, const uint8_t mac[6], const uint8_t (*extra)[16],
			 unsigned n_extra, struct rc_gid_entry *tbl, unsigned n)
{
	struct gid_fill f = { .tbl = tbl, .n = n };
	struct ifaddrs *ifa_list = NULL;
	uint8_t gid[16] = { 0xfe, 0x80 };

	memset(tbl, 0, n * sizeof(*tbl));
	/* The default GID: fe80::/64 with the modified EUI-64 of the MAC (RFC 4291 2.5.1). */
	gid[8] = mac[0] ^ 0x02;
	gid[9] = mac[1];
	gid[10] = mac[2];
	gid[11] = 0xff;
	gid[12] = 0xfe;
	gid[13] = mac[3];
	gid[14] = mac[4];
	gid[15] = mac[5];
	gid_add(&f, gid);

	if (netdev && *netdev && getifaddrs(&ifa_list))
		return -errno;
	for (int pass = 0; pass < 2; pass++) {
		/* Pass 0: IPv4, pass 1: IPv6, from the netdev then from @extra. */
		for (struct ifaddrs *a = ifa_list; a; a = a->ifa_next) {
			if (!a->ifa_addr || strcmp(a->ifa_name, netdev))
				continue;
			if (pass == 0 && a->ifa_addr->sa_family == AF_INET) {
				const struct sockaddr_in *sin = (const struct sockaddr_in *)a->ifa_addr;

				memcpy(gid, v4mapped_prefix, 12);
				memcpy(gid + 12, &sin->sin_addr, 4);
				gid_add(&f, gid);
			} else if (pass == 1 && a->ifa_addr->sa_family == AF_INET6) {
				const struct sockaddr_in6 *sin6 =
					(const struct sockaddr_in6 *)a->ifa_addr;

				gid_add(&f, sin6->sin6_addr.s6_addr);
			}
		}
		for (unsigned i = 0; i < n_extra; i++)
			if (is_v4mapped(extra[i]) == (pass == 0))
				gid_add(&f, extra[i]);
	}
	if (ifa_list)
		freeifaddrs(ifa_list);
	return (int)f.used;
}
