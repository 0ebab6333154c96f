/* SPDX-License-Identifier: MIT */
/* `uroce replay`: conformance fixtures (docs/conformance.md), their runner and the comparison rules. */
#ifndef UROCE_REPLAY_H
#define UROCE_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <infiniband/verbs.h>

#include "uroce/port.h"
#include "uroce/rc.h"

#define FX_NAME_MAX	48
#define FX_MAX_SGE	16

/* ---- A fixture as parsed from NAME.fixture ---- */

struct fx_peer {
	char		name[FX_NAME_MAX];
	uint8_t		mac[6];
	uint8_t		gid[16];
};

struct fx_mr {
	char		name[FX_NAME_MAX];
	uint64_t	len;
	uint64_t	iova;
	int		access;		/* IBV_ACCESS_* */
	bool		has_rkey;
	uint32_t	rkey;		/* the key the fixture's packets use */
	uint8_t		*init;		/* @len bytes */
	uint8_t		*expect;	/* @len bytes: init, pokes, expect mem */
	bool		ignore;		/* `ignore mem.NAME` */
};

struct fx_qp {
	char		name[FX_NAME_MAX];
	enum ibv_qp_type type;
	uint32_t	qpn, dest_qp;
	unsigned	peer;
	uint32_t	rq_psn, sq_psn;
	uint32_t	mtu;		/* bytes */
	int		access;
	uint8_t		max_rd_atomic, max_dest_rd_atomic, min_rnr_timer;
	uint8_t		timeout, retry_cnt, rnr_retry;
	uint8_t		tclass, hop_limit;
	uint32_t	qkey;
	uint32_t	sq_depth, rq_depth;
	/*
	 * XRC_RECV: the number of the XRC SRQ the run makes for it (in the run's
	 * XRC domain, completing into the QP's receive CQ; its receives are posted there).
	 */
	uint32_t	srqn;
	enum ibv_qp_state expect_state;
};

struct fx_sge {
	unsigned	mr;
	uint64_t	off;
	uint32_t	len;
};

enum fx_action_kind { FX_POST_RECV, FX_POST_SEND, FX_DEREG, FX_POKE };

struct fx_action {
	enum fx_action_kind kind;
	int		line;
	bool		timed;		/* `at TIME ...`; else done at set-up */
	uint64_t	t_ns;
	unsigned	qp, mr;
	uint64_t	wr_id;
	unsigned	nsge;
	struct fx_sge	sge[FX_MAX_SGE];
	enum ibv_wr_opcode opcode;
	unsigned	send_flags;	/* IBV_SEND_* */
	uint64_t	remote_addr;
	uint32_t	rkey;
	uint32_t	imm;		/* as on the wire */
	uint32_t	invalidate;
	uint64_t	compare, swap_add;
	unsigned	ah_peer;
	uint32_t	remote_qpn, remote_qkey;
	uint64_t	poke_off;	/* poke */
	uint8_t		*poke_data;
	uint32_t	poke_len;
};

struct fx_cqe {
	int		line;
	unsigned	qp;
	bool		recv;
	uint64_t	wr_id;
	enum ibv_wc_status status;
	bool		has_opcode, has_byte_len;
	enum ibv_wc_opcode opcode;
	uint32_t	byte_len;
	unsigned	flags;		/* IBV_WC_WITH_IMM | IBV_WC_WITH_INV | IBV_WC_GRH */
	uint32_t	imm;		/* host order of the wire value */
	uint32_t	invalidated_rkey;
	uint32_t	src_qp;
};

struct fx_counter {
	int		line;
	char		name[FX_NAME_MAX];
	uint64_t	value;
};

struct fx_event {
	unsigned	qp;
	enum ibv_event_type type;
};

enum fx_timing { FX_TIMING_WINDOW, FX_TIMING_STREAM };

struct fixture {
	char		path[1024];
	char		name[FX_NAME_MAX];
	char		in_pcap[1100], out_pcap[1100];
	enum fx_timing	timing;
	bool		has_end;
	uint64_t	end_ns;
	uint8_t		local_mac[6];
	uint8_t		local_gid[16];
	uint32_t	local_mtu;

	unsigned	n_peers, n_mrs, n_qps, n_actions, n_cqes, n_counters, n_events;
	struct fx_peer	*peers;
	struct fx_mr	*mrs;
	struct fx_qp	*qps;
	struct fx_action *actions;
	struct fx_cqe	*cqes;
	struct fx_counter *counters;
	struct fx_event	*events;
};

/**
 * fixture_load() - parse NAME.fixture; NAME.in.pcap and NAME.out.pcap are beside it.
 * @err: on failure one line, "FILE:LINE: what is wrong".
 * Return: 0, or -errno (-EINVAL for a format error).
 */
int fixture_load(const char *path, struct fixture *fx, char *err, size_t errlen);
void fixture_free(struct fixture *fx);

/* Names used by the format (also for printing). */
const char *fx_wc_status_name(enum ibv_wc_status s);
const char *fx_wc_opcode_name(enum ibv_wc_opcode op);
const char *fx_event_name(enum ibv_event_type t);

/* ---- Frames and their comparison ---- */

struct rp_frame {
	uint64_t	t_ns;
	unsigned	window;		/* input frames at or before t_ns */
	uint32_t	len;
	uint8_t		*data;
};

struct rp_frames {
	unsigned	n, cap;
	struct rp_frame	*f;
};

int rp_frames_add(struct rp_frames *fs, uint64_t t_ns, const void *data, uint32_t len);
void rp_frames_free(struct rp_frames *fs);
/* All frames of a pcap file (timestamps in ns). Return: 0 or -errno with @err. */
int rp_frames_read(const char *path, struct rp_frames *fs, char *err, size_t errlen);
int rp_frames_write(const char *path, const struct rp_frames *fs, char *err, size_t errlen);
/* Set each frame's window from the input frames' times. */
void rp_frames_set_windows(struct rp_frames *fs, const struct rp_frames *input);

/* The first difference found, for the report. */
struct rp_mismatch {
	bool		found;
	char		what[512];	/* one or two lines: where and which field */
	const struct rp_frame *expected;	/* NULL when uroce sent one too many */
	const struct rp_frame *actual;		/* NULL when a frame is missing */
};

/**
 * rp_compare_frames() - the comparison rules of docs/conformance.md.
 * @expected: NAME.out.pcap with windows set from the input.
 * @actual: what uroce sent, windows as recorded by the runner.
 * Return: true when they agree; false with @mm filled.
 */
bool rp_compare_frames(const struct rp_frames *expected, const struct rp_frames *actual,
		       enum fx_timing timing, struct rp_mismatch *mm);

/* Print a frame decoded field by field. */
void rp_print_frame(FILE *out, const char *label, const struct rp_frame *f);

/* ---- Running a fixture ---- */

enum rp_backend { RP_PCAP_PORT, RP_DPDK };

struct rp_options {
	enum rp_backend	backend;
	const char	*keep_dir;	/* write NAME.sent.pcap there; NULL: temporary */
	FILE		*out;		/* report */
	bool		verbose;
};

/**
 * replay_fixture() - run one fixture and print PASS or FAIL (with details) to o->out.
 * Return: 1 passed, 0 failed, -errno when it could not run (reason printed).
 */
int replay_fixture(const char *path, const struct rp_options *o);

#endif
