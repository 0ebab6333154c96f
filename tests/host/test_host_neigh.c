// SPDX-License-Identifier: MIT
/* ARP and neighbour discovery: requests, answers, retries, timeouts, expiry, malformed input. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "host_neigh.h"
#include "uroce/wire.h"

#define MS 1000000ull

static const uint8_t our_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
static const uint8_t peer_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };
static const uint8_t our_v4[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 };
static const uint8_t peer_v4[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 };
static const uint8_t our_v6[16] = { 0xfd, 0x77, [15] = 1 };
static const uint8_t peer_v6[16] = { 0xfd, 0x77, [13] = 0xab, 0xcd, 0x02 };

static uint8_t sent[8][128];
static uint32_t sent_len[8];
static unsigned n_sent;

static int capture(void *arg, const void *frame, uint32_t len)
{
	(void)arg;
	ck_assert_uint_le(len, 128);
	if (n_sent < 8) {
		memcpy(sent[n_sent], frame, len);
		sent_len[n_sent] = len;
	}
	n_sent++;
	return 0;
}

static struct host_neigh *make(bool answer)
{
	struct host_neigh_cfg cfg = { 0 };

	memcpy(cfg.mac, our_mac, 6);
	cfg.n_addrs = 2;
	memcpy(cfg.addrs[0], our_v4, 16);
	memcpy(cfg.addrs[1], our_v6, 16);
	cfg.answer_requests = answer;
	cfg.xmit = capture;
	n_sent = 0;
	return host_neigh_create(&cfg);
}

/* An ARP frame written out field by field (RFC 826), independent of the code under test. */
static uint32_t arp_frame(uint8_t *f, uint16_t oper, const uint8_t sha[6], const uint8_t spa[4],
			  const uint8_t tha[6], const uint8_t tpa[4], const uint8_t dst[6])
{
	memset(f, 0, 60);
	memcpy(f, dst, 6);
	memcpy(f + 6, sha, 6);
	f[12] = 0x08, f[13] = 0x06;
	f[14] = 0, f[15] = 1, f[16] = 0x08, f[17] = 0, f[18] = 6, f[19] = 4;
	f[20] = (uint8_t)(oper >> 8), f[21] = (uint8_t)oper;
	memcpy(f + 22, sha, 6);
	memcpy(f + 28, spa, 4);
	memcpy(f + 32, tha, 6);
	memcpy(f + 38, tpa, 4);
	return 60;
}

/* RFC 4443 checksum, computed here on its own. */
static uint16_t csum6(const uint8_t *ip6, const uint8_t *icmp, uint32_t len)
{
	uint32_t sum = 58 + len;

	for (int i = 8; i < 40; i += 2)
		sum += wire_load16(ip6 + i);
	for (uint32_t i = 0; i < len; i += 2)
		sum += (uint32_t)(icmp[i] << 8 | (i + 1 < len ? icmp[i + 1] : 0));
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static uint32_t nd_frame(uint8_t *f, uint8_t type, const uint8_t src_mac[6], const uint8_t src[16],
			 const uint8_t dst[16], const uint8_t target[16], const uint8_t opt_mac[6],
			 uint8_t hop_limit)
{
	uint8_t *ip6 = f + 14, *icmp = f + 54;
	uint16_t c;

	memset(f, 0, 86);
	memcpy(f, our_mac, 6);
	memcpy(f + 6, src_mac, 6);
	f[12] = 0x86, f[13] = 0xdd;
	ip6[0] = 0x60;
	ip6[5] = 32;
	ip6[6] = 58;
	ip6[7] = hop_limit;
	memcpy(ip6 + 8, src, 16);
	memcpy(ip6 + 24, dst, 16);
	icmp[0] = type;
	if (type == 136)
		icmp[4] = 0x60;
	memcpy(icmp + 8, target, 16);
	icmp[24] = type == 135 ? 1 : 2;
	icmp[25] = 1;
	memcpy(icmp + 26, opt_mac, 6);
	c = csum6(ip6, icmp, 32);
	icmp[2] = (uint8_t)(c >> 8), icmp[3] = (uint8_t)c;
	return 86;
}

START_TEST(arp_resolve)
{
	struct host_neigh *n = make(false);
	struct host_neigh_counters c;
	uint8_t mac[6], f[64];
	static const uint8_t zero[6];

	ck_assert_int_eq(host_neigh_resolve(n, peer_v4, mac, 1 * MS), -EAGAIN);
	ck_assert_uint_eq(n_sent, 1);
	/* Broadcast request, padded to the Ethernet minimum, asking for 10.0.0.2 from 10.0.0.1. */
	ck_assert_uint_eq(sent_len[0], 60);
	ck_assert_mem_eq(sent[0], "\xff\xff\xff\xff\xff\xff", 6);
	ck_assert_mem_eq(sent[0] + 6, our_mac, 6);
	ck_assert_uint_eq(wire_load16(sent[0] + 12), 0x0806);
	ck_assert_uint_eq(wire_load16(sent[0] + 20), 1);
	ck_assert_mem_eq(sent[0] + 22, our_mac, 6);
	ck_assert_mem_eq(sent[0] + 28, our_v4 + 12, 4);
	ck_assert_mem_eq(sent[0] + 32, zero, 6);
	ck_assert_mem_eq(sent[0] + 38, peer_v4 + 12, 4);
	/* Asked again before the retry interval: no new request. */
	ck_assert_int_eq(host_neigh_resolve(n, peer_v4, mac, 2 * MS), -EAGAIN);
	ck_assert_uint_eq(n_sent, 1);
	arp_frame(f, 2, peer_mac, peer_v4 + 12, our_mac, our_v4 + 12, our_mac);
	ck_assert(host_neigh_input(n, f, 60, 3 * MS));
	ck_assert_int_eq(host_neigh_resolve(n, peer_v4, mac, 4 * MS), 0);
	ck_assert_mem_eq(mac, peer_mac, 6);
	host_neigh_counters(n, &c);
	ck_assert_uint_eq(c.arp_req_tx, 1);
	ck_assert_uint_eq(c.arp_reply_rx, 1);
	ck_assert_uint_eq(c.resolved, 1);
	host_neigh_destroy(n);
}
END_TEST

START_TEST(retries_then_unreachable)
{
	struct host_neigh *n = make(false);
	uint64_t t = 0;
	uint8_t mac[6];
	int ret;

	while ((ret = host_neigh_resolve(n, peer_v4, mac, t)) == -EAGAIN)
		t += 10 * MS;
	ck_assert_int_eq(ret, -EHOSTUNREACH);
	ck_assert_uint_eq(t, HOST_NEIGH_TIMEOUT_NS);
	ck_assert_uint_eq(n_sent, HOST_NEIGH_TIMEOUT_NS / HOST_NEIGH_RETRY_NS);
	/* Held down: a failed entry answers at once, sends nothing. */
	ck_assert_int_eq(host_neigh_resolve(n, peer_v4, mac, t + 10 * MS), -EHOSTUNREACH);
	ck_assert_uint_eq(n_sent, HOST_NEIGH_TIMEOUT_NS / HOST_NEIGH_RETRY_NS);
	/* Then a new attempt. */
	ck_assert_int_eq(host_neigh_resolve(n, peer_v4, mac, t + HOST_NEIGH_HOLDDOWN_NS), -EAGAIN);
	ck_assert_uint_eq(n_sent, HOST_NEIGH_TIMEOUT_NS / HOST_NEIGH_RETRY_NS + 1);
	host_neigh_destroy(n);
}
END_TEST

START_TEST(expiry_reconfirms)
{
	struct host_neigh *n = make(false);
	uint8_t mac[6], f[64];
	uint64_t t;

	host_neigh_resolve(n, peer_v4, mac, 0);
	arp_frame(f, 2, peer_mac, peer_v4 + 12, our_mac, our_v4 + 12, our_mac);
	host_neigh_input(n, f, 60, 1 * MS);
	t = 1 * MS + HOST_NEIGH_REACHABLE_NS;
	/* Stale: still answered, and a request goes out to re-confirm. */
	ck_assert_int_eq(host_neigh_resolve(n, peer_v4, mac, t), 0);
	ck_assert_uint_eq(n_sent, 2);
	ck_assert_int_eq(host_neigh_resolve(n, peer_v4, mac, t + HOST_NEIGH_RETRY_NS), 0);
	ck_assert_uint_eq(n_sent, 3);
	/* Nobody answers: unreachable after the timeout. */
	ck_assert_int_eq(host_neigh_resolve(n, peer_v4, mac, t + HOST_NEIGH_TIMEOUT_NS), -EHOSTUNREACH);
	host_neigh_destroy(n);
}
END_TEST

START_TEST(answers_only_when_owner)
{
	uint8_t f[64], other[4] = { 10, 0, 0, 9 };
	static const uint8_t zero[6];

	for (int answer = 0; answer <= 1; answer++) {
		struct host_neigh *n = make(answer);
		uint8_t mac[6];

		arp_frame(f, 1, peer_mac, peer_v4 + 12, zero, our_v4 + 12,
			  (const uint8_t *)"\xff\xff\xff\xff\xff\xff");
		ck_assert(host_neigh_input(n, f, 60, 0));
		ck_assert_uint_eq(n_sent, (unsigned)answer);
		if (answer) {
			ck_assert_mem_eq(sent[0], peer_mac, 6);
			ck_assert_uint_eq(wire_load16(sent[0] + 20), 2);
			ck_assert_mem_eq(sent[0] + 22, our_mac, 6);
			ck_assert_mem_eq(sent[0] + 28, our_v4 + 12, 4);
			ck_assert_mem_eq(sent[0] + 32, peer_mac, 6);
			ck_assert_mem_eq(sent[0] + 38, peer_v4 + 12, 4);
		}
		/* The asker is learnt either way (it is about to talk to us). */
		ck_assert_int_eq(host_neigh_resolve(n, peer_v4, mac, 1), 0);
		ck_assert_mem_eq(mac, peer_mac, 6);
		/* Not our address: never answered. */
		arp_frame(f, 1, peer_mac, peer_v4 + 12, zero, other,
			  (const uint8_t *)"\xff\xff\xff\xff\xff\xff");
		host_neigh_input(n, f, 60, 2);
		ck_assert_uint_eq(n_sent, (unsigned)answer);
		host_neigh_destroy(n);
	}
}
END_TEST

START_TEST(nd_resolve)
{
	struct host_neigh *n = make(false);
	uint8_t mac[6], f[96];
	static const uint8_t snm[16] = { 0xff, 0x02, [11] = 1, 0xff, 0xab, 0xcd, 0x02 };

	ck_assert_int_eq(host_neigh_resolve(n, peer_v6, mac, 0), -EAGAIN);
	ck_assert_uint_eq(n_sent, 1);
	ck_assert_uint_eq(sent_len[0], 86);
	ck_assert_mem_eq(sent[0], "\x33\x33\xff\xab\xcd\x02", 6);
	ck_assert_uint_eq(wire_load16(sent[0] + 12), 0x86dd);
	ck_assert_uint_eq(sent[0][20], 58);
	ck_assert_uint_eq(sent[0][21], 255);
	ck_assert_mem_eq(sent[0] + 22, our_v6, 16);
	ck_assert_mem_eq(sent[0] + 38, snm, 16);
	ck_assert_uint_eq(sent[0][54], 135);
	ck_assert_mem_eq(sent[0] + 62, peer_v6, 16);
	ck_assert_uint_eq(sent[0][78], 1);		/* source link-layer address option */
	ck_assert_mem_eq(sent[0] + 80, our_mac, 6);
	ck_assert_uint_eq(csum6(sent[0] + 14, sent[0] + 54, 32), 0);
	nd_frame(f, 136, peer_mac, peer_v6, our_v6, peer_v6, peer_mac, 255);
	ck_assert(host_neigh_input(n, f, 86, 1));
	ck_assert_int_eq(host_neigh_resolve(n, peer_v6, mac, 2), 0);
	ck_assert_mem_eq(mac, peer_mac, 6);
	host_neigh_destroy(n);
}
END_TEST

START_TEST(nd_answer_and_checks)
{
	struct host_neigh *n = make(true);
	struct host_neigh_counters c;
	uint8_t f[96], mac[6];
	static const uint8_t snm[16] = { 0xff, 0x02, [11] = 1, 0xff, 0, 0, 1 };

	nd_frame(f, 135, peer_mac, peer_v6, snm, our_v6, peer_mac, 255);
	ck_assert(host_neigh_input(n, f, 86, 0));
	ck_assert_uint_eq(n_sent, 1);
	ck_assert_mem_eq(sent[0], peer_mac, 6);
	ck_assert_mem_eq(sent[0] + 22, our_v6, 16);
	ck_assert_mem_eq(sent[0] + 38, peer_v6, 16);
	ck_assert_uint_eq(sent[0][54], 136);
	ck_assert_uint_eq(sent[0][58], 0x60);		/* Solicited, Override */
	ck_assert_uint_eq(sent[0][78], 2);		/* target link-layer address */
	ck_assert_uint_eq(csum6(sent[0] + 14, sent[0] + 54, 32), 0);
	ck_assert_int_eq(host_neigh_resolve(n, peer_v6, mac, 1), 0);
	/* RFC 4861 7.1.1: hop limit other than 255 or a bad checksum: dropped, counted. */
	nd_frame(f, 135, peer_mac, peer_v6, snm, our_v6, peer_mac, 64);
	ck_assert(host_neigh_input(n, f, 86, 2));
	nd_frame(f, 135, peer_mac, peer_v6, snm, our_v6, peer_mac, 255);
	f[60] ^= 1;
	ck_assert(host_neigh_input(n, f, 86, 3));
	ck_assert_uint_eq(n_sent, 1);
	host_neigh_counters(n, &c);
	ck_assert_uint_eq(c.malformed, 2);
	ck_assert_uint_eq(c.ns_rx, 1);
	ck_assert_uint_eq(c.na_tx, 1);
	/* Other ICMPv6 is not neighbour traffic. */
	f[54] = 128;
	ck_assert(!host_neigh_input(n, f, 86, 4));
	host_neigh_destroy(n);
}
END_TEST

START_TEST(link_local_is_ours)
{
	struct host_neigh *n = make(true);
	uint8_t f[96], ll[16];
	static const uint8_t snm[16] = { 0xff, 0x02, [11] = 1, 0xff };

	host_link_local_gid(our_mac, ll);
	ck_assert_mem_eq(ll, "\xfe\x80\0\0\0\0\0\0\x00\x00\x00\xff\xfe\x00\x00\x01", 16);
	nd_frame(f, 135, peer_mac, peer_v6, snm, ll, peer_mac, 255);
	host_neigh_input(n, f, 86, 0);
	ck_assert_uint_eq(n_sent, 1);
	host_neigh_destroy(n);
}
END_TEST

START_TEST(bad_gids_and_short_frames)
{
	struct host_neigh *n = make(true);
	struct host_neigh_counters c;
	static const uint8_t zero[16], mcast6[16] = { 0xff, 0x02, [15] = 1 };
	static const uint8_t mcast4[16] = { [10] = 0xff, [11] = 0xff, 224, 0, 0, 1 };
	uint8_t mac[6], f[64];

	ck_assert_int_eq(host_neigh_resolve(n, zero, mac, 0), -EINVAL);
	ck_assert_int_eq(host_neigh_resolve(n, mcast6, mac, 0), -EINVAL);
	ck_assert_int_eq(host_neigh_resolve(n, mcast4, mac, 0), -EINVAL);
	ck_assert_uint_eq(n_sent, 0);
	arp_frame(f, 2, peer_mac, peer_v4 + 12, our_mac, our_v4 + 12, our_mac);
	ck_assert(host_neigh_input(n, f, 30, 0));		/* truncated ARP */
	f[18] = 8;					/* hardware length not 6 */
	ck_assert(host_neigh_input(n, f, 60, 0));
	ck_assert(!host_neigh_input(n, f, 10, 0));
	host_neigh_counters(n, &c);
	ck_assert_uint_eq(c.malformed, 2);
	host_neigh_destroy(n);
}
END_TEST

START_TEST(table_pressure)
{
	struct host_neigh *n = make(false);
	uint8_t gid[16], mac[6], f[64];

	/* More destinations than entries: resolving keeps working for the newest. */
	for (unsigned i = 0; i < HOST_NEIGH_ENTRIES * 2; i++) {
		uint8_t ip[4] = { 10, 1, (uint8_t)(i >> 8), (uint8_t)i };
		uint8_t hw[6] = { 2, 9, 0, 0, (uint8_t)(i >> 8), (uint8_t)i };

		memcpy(gid, peer_v4, 12);
		memcpy(gid + 12, ip, 4);
		host_neigh_resolve(n, gid, mac, i * MS);
		arp_frame(f, 2, hw, ip, our_mac, our_v4 + 12, our_mac);
		host_neigh_input(n, f, 60, i * MS + 1);
		ck_assert_int_eq(host_neigh_resolve(n, gid, mac, i * MS + 2), 0);
		ck_assert_mem_eq(mac, hw, 6);
	}
	host_neigh_destroy(n);
}
END_TEST

Suite *host_neigh_suite(void);

Suite *host_neigh_suite(void)
{
	Suite *s = suite_create("host_neigh");
	TCase *t = tcase_create("neigh");

	tcase_add_test(t, arp_resolve);
	tcase_add_test(t, retries_then_unreachable);
	tcase_add_test(t, expiry_reconfirms);
	tcase_add_test(t, answers_only_when_owner);
	tcase_add_test(t, nd_resolve);
	tcase_add_test(t, nd_answer_and_checks);
	tcase_add_test(t, link_local_is_ours);
	tcase_add_test(t, bad_gids_and_short_frames);
	tcase_add_test(t, table_pressure);
	suite_add_tcase(s, t);
	return s;
}
