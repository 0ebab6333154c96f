// SPDX-License-Identifier: MIT
/* Frame lists of `uroce replay`: read and write pcap files, windows, printing decoded frames. */
#include <errno.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "uroce/inspect_decode.h"

int rp_frames_add(struct rp_frames *fs, uint64_t t_ns, const void *data, uint32_t len)
{
	struct rp_frame *f;

	if (fs->n == fs->cap) {
		unsigned cap = fs->cap ? 2 * fs->cap : 64;
		struct rp_frame *nf = realloc(fs->f, cap * sizeof(*nf));

		if (!nf)
			return -ENOMEM;
		fs->f = nf;
		fs->cap = cap;
	}
	f = &fs->f[fs->n];
	f->data = malloc(len ? len : 1);
	if (!f->data)
		return -ENOMEM;
	memcpy(f->data, data, len);
	f->len = len;
	f->t_ns = t_ns;
	f->window = 0;
	fs->n++;
	return 0;
}

void rp_frames_free(struct rp_frames *fs)
{
	for (unsigned i = 0; i < fs->n; i++)
		free(fs->f[i].data);
	free(fs->f);
	memset(fs, 0, sizeof(*fs));
}

int rp_frames_read(const char *path, struct rp_frames *fs, char *err, size_t errlen)
{
	char perr[PCAP_ERRBUF_SIZE] = "";
	struct pcap_pkthdr *hdr;
	const u_char *data;
	pcap_t *pc;
	int r;

	pc = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, perr);
	if (!pc) {
		snprintf(err, errlen, "%s: cannot read as a pcap file: %s", path, perr);
		return -EINVAL;
	}
	if (pcap_datalink(pc) != DLT_EN10MB) {
		snprintf(err, errlen, "%s: not an Ethernet capture", path);
		pcap_close(pc);
		return -EINVAL;
	}
	while ((r = pcap_next_ex(pc, &hdr, &data)) == 1) {
		uint64_t t = (uint64_t)hdr->ts.tv_sec * 1000000000u + (uint64_t)hdr->ts.tv_usec;

		if (rp_frames_add(fs, t, data, hdr->caplen)) {
			pcap_close(pc);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	if (r == PCAP_ERROR) {
		snprintf(err, errlen, "%s: %s", path, pcap_geterr(pc));
		pcap_close(pc);
		return -EINVAL;
	}
	pcap_close(pc);
	return 0;
}

int rp_frames_write(const char *path, const struct rp_frames *fs, char *err, size_t errlen)
{
	pcap_t *dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65536,
							    PCAP_TSTAMP_PRECISION_NANO);
	pcap_dumper_t *d = dead ? pcap_dump_open(dead, path) : NULL;

	if (!d) {
		snprintf(err, errlen, "%s: cannot write: %s", path,
			 dead ? pcap_geterr(dead) : "out of memory");
		if (dead)
			pcap_close(dead);
		return -EIO;
	}
	for (unsigned i = 0; i < fs->n; i++) {
		struct pcap_pkthdr h = {
			.ts.tv_sec = (time_t)(fs->f[i].t_ns / 1000000000u),
			.ts.tv_usec = (suseconds_t)(fs->f[i].t_ns % 1000000000u),
			.caplen = fs->f[i].len,
			.len = fs->f[i].len,
		};

		pcap_dump((u_char *)d, &h, fs->f[i].data);
	}
	pcap_dump_close(d);
	pcap_close(dead);
	return 0;
}

void rp_frames_set_windows(struct rp_frames *fs, const struct rp_frames *input)
{
	unsigned k = 0;

	/* Both lists are in time order; the input's may hold equal times (one burst). */
	for (unsigned i = 0; i < fs->n; i++) {
		while (k < input->n && input->f[k].t_ns <= fs->f[i].t_ns)
			k++;
		fs->f[i].window = k;
	}
}

void rp_print_frame(FILE *out, const char *label, const struct rp_frame *f)
{
	struct inspect_decode_ts ts = {
		.sec = (int64_t)(f->t_ns / 1000000000u),
		.nsec = (uint32_t)(f->t_ns % 1000000000u),
	};
	struct wire_frame fr;

	fprintf(out, "  %s (window %u):\n", label, f->window);
	inspect_decode_frame(&fr, f->data, f->len, f->len);
	inspect_decode_verbose(out, 0, &ts, &fr);
}
