// SPDX-License-Identifier: MIT
/*
 * Oracle input: packets for every opcode with random fields (IPv4, IPv6,
 * VLAN, every pad count), then as many RoCE v1 ones (EtherType 0x8915,
 * random or IPv4-mapped GIDs), built by wire_build() into a pcap for scapy
 * and tshark to judge.  Usage: wire-oracle-gen OUT.pcap [SEED [PER_OPCODE]]
 */
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "uroce/wire.h"
#include "wire_testutil.h"

int main(int argc, char **argv)
{
	static uint8_t frame[TEST_MAX_FRAME], payload[4096];
	static const uint32_t pmtus[] = { 256, 512, 1024, 2048, 4096 };
	unsigned long seed = argc > 2 ? strtoul(argv[2], NULL, 0) : 1;
	unsigned long per_op = argc > 3 ? strtoul(argv[3], NULL, 0) : 8;
	struct pcap_pkthdr h = { { 1700000000, 0 }, 0, 0 };
	pcap_dumper_t *out;
	struct test_rng r;
	unsigned n = 0;
	pcap_t *dead;

	if (argc < 2 || per_op == 0) {
		fprintf(stderr, "usage: wire-oracle-gen OUT.pcap [SEED [PER_OPCODE]]\n");
		return 2;
	}
	dead = pcap_open_dead(DLT_EN10MB, 65535);
	out = dead ? pcap_dump_open(dead, argv[1]) : NULL;
	if (!out) {
		fprintf(stderr, "wire-oracle-gen: cannot write %s: %s\n", argv[1],
			dead ? pcap_geterr(dead) : "pcap_open_dead failed");
		return 1;
	}
	test_rng_seed(&r, seed);
	for (unsigned n_op = 0; n_op < 512; n_op++) {
		unsigned op = n_op % 256;
		bool v1 = n_op >= 256;

		if (!wire_opcode_valid((uint8_t)op))
			continue;
		for (unsigned long k = 0; k < per_op; k++) {
			struct wire_build_desc d;
			uint32_t len, plen;

			test_random_desc(&r, (uint8_t)op, &d);
			if (v1) {
				d.roce_v1 = true;
				d.ip_version = 6;
			}
			plen = test_payload_len(&r, (uint8_t)op, pmtus[test_rng_below(&r, 5)]);
			test_rng_fill(&r, payload, plen);
			len = wire_build(frame, sizeof(frame), &d, payload, plen);
			if (!len) {
				fprintf(stderr, "wire-oracle-gen: could not build opcode 0x%02x\n", op);
				return 1;
			}
			h.caplen = h.len = len;
			h.ts.tv_usec = (suseconds_t)(++n % 1000000);
			pcap_dump((u_char *)out, &h, frame);
		}
	}
	pcap_dump_close(out);
	pcap_close(dead);
	printf("wire-oracle-gen: %u packets, %lu per opcode, seed %lu -> %s\n", n, per_op, seed,
	       argv[1]);
	return 0;
}
