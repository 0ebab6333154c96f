/* SPDX-License-Identifier: MIT */
/* Counters readable from outside the process: one small self-describing file per device and process. */
#ifndef UROCE_HOST_STATS_H
#define UROCE_HOST_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * RUN_DIR/stats/IBDEV.PID, mapped shared.  The file carries its own
 * counter names, so `uroce stat` prints whatever the writing process
 * counted, without sharing struct layouts with it.
 *
 *   header | names[n_dev + n_qp][HOST_STATS_NAME_LEN] | dev[n_dev] | qp slots
 *
 * A writer publishes a snapshot between host_stats_begin() and
 * host_stats_end() (a sequence count, odd while writing); readers retry
 * while it is odd or changed under them.
 */
#define HOST_STATS_MAGIC		0x0a54535345435255ull	/* "URCESTS\n" */
#define HOST_STATS_VERSION	3
#define HOST_STATS_NAME_LEN	32
/* As many as an engine has QPs (RC_MAX_QP); the file is sparse, n_qp_slots says what is used. */
#define HOST_STATS_QP_SLOTS	16384

struct host_stats_hdr {
	uint64_t	magic;
	uint32_t	version;
	uint32_t	hdr_size;
	uint64_t	file_size;
	uint64_t	seq;
	int32_t		pid;
	uint32_t	n_dev;		/* device counters */
	uint32_t	n_qp;		/* counters per QP */
	uint32_t	n_qp_slots;	/* slots used so far: the highest used + 1 */
	uint64_t	names_off;
	uint64_t	dev_off;	/* uint64_t[n_dev] */
	uint64_t	qp_off;		/* struct host_stats_qp_slot with uint64_t[n_qp] each */
	uint64_t	qp_slot_size;
	uint64_t	started_ns;	/* CLOCK_REALTIME */
	uint64_t	updated_ns;
	char		ibdev[64];
	char		netdev[16];
	char		pmd[16];
};

struct host_stats_qp_slot {
	uint32_t	qpn;
	uint32_t	live;		/* 0: slot unused */
	uint64_t	v[];
};

struct host_stats;

/*
 * Create this process's file for @ibdev.  @dev_names / @qp_names: counter
 * names, NULL-terminated.  Return: NULL with one line in @err on failure.
 */
struct host_stats *host_stats_create(const char *ibdev, const char *netdev, const char *pmd,
				 const char *const *dev_names, const char *const *qp_names,
				 char *err, size_t errlen);
/* Unmaps and removes the file. */
void host_stats_destroy(struct host_stats *s);

void host_stats_begin(struct host_stats *s);
void host_stats_end(struct host_stats *s);
uint64_t *host_stats_dev(struct host_stats *s);
/* Slot @i (0 .. HOST_STATS_QP_SLOTS-1): its counters; sets qpn and live, and publishes slots up to @i. */
uint64_t *host_stats_qp(struct host_stats *s, unsigned i, uint32_t qpn, bool live);

/* ---- Reading (uroce stat) ---- */

struct host_stats_view {
	const struct host_stats_hdr *hdr;	/* a private, consistent copy */
	size_t		size;
	bool		alive;		/* the writing process still runs */
	char		path[768];
};

static inline const char *host_stats_name(const struct host_stats_view *v, unsigned i)
{
	return (const char *)v->hdr + v->hdr->names_off + (size_t)i * HOST_STATS_NAME_LEN;
}

static inline const uint64_t *host_stats_dev_values(const struct host_stats_view *v)
{
	return (const uint64_t *)((const char *)v->hdr + v->hdr->dev_off);
}

static inline const struct host_stats_qp_slot *host_stats_qp_view(const struct host_stats_view *v,
								 unsigned i)
{
	return (const struct host_stats_qp_slot *)((const char *)v->hdr + v->hdr->qp_off +
						 i * v->hdr->qp_slot_size);
}

/**
 * host_stats_read_all() - every stats file in the run directory.
 * @cb: called per file with a consistent snapshot; return non-zero to stop.
 * @remove_stale: unlink files whose process is gone.
 * Return: files visited, or -errno when the directory cannot be read.
 */
int host_stats_read_all(int (*cb)(void *arg, const struct host_stats_view *v), void *arg,
		      bool remove_stale);

/*
 * The counter name of a drop reason: @prefix, then @reason in lower case
 * ("drop_" and "UNKNOWN_QP": "drop_unknown_qp"), into @buf.  Return: @buf.
 */
const char *host_stats_drop_name(char *buf, size_t len, const char *prefix, const char *reason);

#endif
