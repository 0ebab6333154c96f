// SPDX-License-Identifier: MIT
/* Parser of the conformance fixture text format (docs/conformance.md). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "replay.h"

#define MAX_WORDS	512	/* summary and spec lines are prose */

struct parser {
	struct fixture	*fx;
	const char	*path;
	int		line;
	char		*err;
	size_t		errlen;
	bool		seen_version;
};

/* ---- Name tables ---- */

struct name_val {
	const char	*name;
	int		val;
};

#define NV(prefix, n) { #n, prefix##n }

static const struct name_val wc_status_names[] = {
	NV(IBV_WC_, SUCCESS), NV(IBV_WC_, LOC_LEN_ERR), NV(IBV_WC_, LOC_QP_OP_ERR),
	NV(IBV_WC_, LOC_EEC_OP_ERR), NV(IBV_WC_, LOC_PROT_ERR), NV(IBV_WC_, WR_FLUSH_ERR),
	NV(IBV_WC_, MW_BIND_ERR), NV(IBV_WC_, BAD_RESP_ERR), NV(IBV_WC_, LOC_ACCESS_ERR),
	NV(IBV_WC_, REM_INV_REQ_ERR), NV(IBV_WC_, REM_ACCESS_ERR), NV(IBV_WC_, REM_OP_ERR),
	NV(IBV_WC_, RETRY_EXC_ERR), NV(IBV_WC_, RNR_RETRY_EXC_ERR), NV(IBV_WC_, LOC_RDD_VIOL_ERR),
	NV(IBV_WC_, REM_INV_RD_REQ_ERR), NV(IBV_WC_, REM_ABORT_ERR), NV(IBV_WC_, INV_EECN_ERR),
	NV(IBV_WC_, INV_EEC_STATE_ERR), NV(IBV_WC_, FATAL_ERR), NV(IBV_WC_, RESP_TIMEOUT_ERR),
	NV(IBV_WC_, GENERAL_ERR),
	{ NULL, 0 }
};

static const struct name_val wc_opcode_names[] = {
	NV(IBV_WC_, SEND), NV(IBV_WC_, RDMA_WRITE), NV(IBV_WC_, RDMA_READ), NV(IBV_WC_, COMP_SWAP),
	NV(IBV_WC_, FETCH_ADD), NV(IBV_WC_, BIND_MW), NV(IBV_WC_, LOCAL_INV), NV(IBV_WC_, RECV),
	NV(IBV_WC_, RECV_RDMA_WITH_IMM), NV(IBV_WC_, ATOMIC_WRITE),
	{ NULL, 0 }
};

static const struct name_val wr_opcode_names[] = {
	NV(IBV_WR_, SEND), NV(IBV_WR_, SEND_WITH_IMM), NV(IBV_WR_, SEND_WITH_INV),
	NV(IBV_WR_, RDMA_WRITE), NV(IBV_WR_, RDMA_WRITE_WITH_IMM), NV(IBV_WR_, RDMA_READ),
	NV(IBV_WR_, ATOMIC_CMP_AND_SWP), NV(IBV_WR_, ATOMIC_FETCH_AND_ADD),
	NV(IBV_WR_, ATOMIC_WRITE),
	{ NULL, 0 }
};

static const struct name_val event_names[] = {
	NV(IBV_EVENT_, CQ_ERR), NV(IBV_EVENT_, QP_FATAL), NV(IBV_EVENT_, QP_REQ_ERR),
	NV(IBV_EVENT_, QP_ACCESS_ERR), NV(IBV_EVENT_, COMM_EST), NV(IBV_EVENT_, SQ_DRAINED),
	NV(IBV_EVENT_, PATH_MIG), NV(IBV_EVENT_, PATH_MIG_ERR), NV(IBV_EVENT_, DEVICE_FATAL),
	NV(IBV_EVENT_, PORT_ACTIVE), NV(IBV_EVENT_, PORT_ERR), NV(IBV_EVENT_, LID_CHANGE),
	NV(IBV_EVENT_, PKEY_CHANGE), NV(IBV_EVENT_, SM_CHANGE), NV(IBV_EVENT_, SRQ_ERR),
	NV(IBV_EVENT_, SRQ_LIMIT_REACHED), NV(IBV_EVENT_, QP_LAST_WQE_REACHED),
	NV(IBV_EVENT_, CLIENT_REREGISTER), NV(IBV_EVENT_, GID_CHANGE),
	{ NULL, 0 }
};

static const struct name_val qp_state_names[] = {
	NV(IBV_QPS_, RESET), NV(IBV_QPS_, INIT), NV(IBV_QPS_, RTR), NV(IBV_QPS_, RTS),
	NV(IBV_QPS_, SQD), NV(IBV_QPS_, SQE), { "ERR", IBV_QPS_ERR },
	{ NULL, 0 }
};

static const struct name_val access_names[] = {
	NV(IBV_ACCESS_, LOCAL_WRITE), NV(IBV_ACCESS_, REMOTE_WRITE), NV(IBV_ACCESS_, REMOTE_READ),
	NV(IBV_ACCESS_, REMOTE_ATOMIC), { "FLUSH_GLOBAL", RC_ACCESS_FLUSH_GLOBAL },
	{ "FLUSH_PERSISTENT", RC_ACCESS_FLUSH_PERSISTENT },
	{ NULL, 0 }
};

static const struct name_val send_flag_names[] = {
	NV(IBV_SEND_, SIGNALED), NV(IBV_SEND_, SOLICITED), NV(IBV_SEND_, INLINE),
	NV(IBV_SEND_, FENCE),
	{ NULL, 0 }
};

static const struct name_val wc_flag_names[] = {
	{ "IMM", IBV_WC_WITH_IMM }, { "INV", IBV_WC_WITH_INV }, { "GRH", IBV_WC_GRH },
	{ NULL, 0 }
};

static const char *name_of(const struct name_val *t, int v)
{
	for (; t->name; t++)
		if (t->val == v)
			return t->name;
	return "?";
}

const char *fx_wc_status_name(enum ibv_wc_status s)
{
	return name_of(wc_status_names, (int)s);
}

const char *fx_wc_opcode_name(enum ibv_wc_opcode op)
{
	return name_of(wc_opcode_names, (int)op);
}

const char *fx_event_name(enum ibv_event_type t)
{
	return name_of(event_names, (int)t);
}

/* ---- Errors and scalars ---- */

__attribute__((format(printf, 2, 3)))
static int fail(struct parser *ps, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(ps->err, ps->errlen, "%s:%d: %s", ps->path, ps->line, msg);
	return -EINVAL;
}

static int parse_u64(struct parser *ps, const char *key, const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-')
		return fail(ps, "%s=%s: not a number", key, s);
	return 0;
}

static int parse_u32(struct parser *ps, const char *key, const char *s, uint32_t max,
		     uint32_t *out)
{
	uint64_t v;
	int r = parse_u64(ps, key, s, &v);

	if (r)
		return r;
	if (v > max)
		return fail(ps, "%s=%s: larger than %u", key, s, max);
	*out = (uint32_t)v;
	return 0;
}

static int parse_u8(struct parser *ps, const char *key, const char *s, uint8_t max, uint8_t *out)
{
	uint32_t v = 0;
	int r = parse_u32(ps, key, s, max, &v);

	*out = (uint8_t)v;
	return r;
}

/* "1500us", "2ms", "1s", "250ns" -> nanoseconds. */
static int parse_time(struct parser *ps, const char *s, uint64_t *ns)
{
	static const struct { const char *unit; uint64_t mul; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
	};
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return fail(ps, "'%s' is not a time (a number and ns, us, ms or s)", s);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit)) {
			*ns = v * units[i].mul;
			return 0;
		}
	return fail(ps, "'%s': the time needs a unit (ns, us, ms or s)", s);
}

static int parse_name(struct parser *ps, const char *what, const struct name_val *t,
		      const char *s, int *out)
{
	*out = 0;
	for (; t->name; t++)
		if (!strcmp(t->name, s)) {
			*out = t->val;
			return 0;
		}
	return fail(ps, "unknown %s '%s'", what, s);
}

/* Comma-separated flag names; "none" is the empty set. */
static int parse_flags(struct parser *ps, const char *what, const struct name_val *t,
		       const char *s, int *out)
{
	char buf[256], *save = NULL;

	*out = 0;
	if (!strcmp(s, "none"))
		return 0;
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int v, r = parse_name(ps, what, t, w, &v);

		if (r)
			return r;
		*out |= v;
	}
	return 0;
}

static int parse_mac(struct parser *ps, const char *s, uint8_t mac[6])
{
	unsigned b[6];
	char tail;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &tail) != 6)
		return fail(ps, "'%s' is not a MAC address", s);
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

static int parse_ip(struct parser *ps, const char *s, uint8_t gid[16])
{
	struct in_addr a4;

	if (inet_pton(AF_INET, s, &a4) == 1) {
		memset(gid, 0, 10);
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, &a4, 4);
		return 0;
	}
	if (inet_pton(AF_INET6, s, gid) == 1)
		return 0;
	return fail(ps, "'%s' is not an IPv4 or IPv6 address", s);
}

/* hex:..., pattern:SEED[:START:LEN], fill:0xAB[:LEN], zero[:LEN] -> @len bytes at @out. */
static int parse_bytes(struct parser *ps, const char *s, uint8_t **out, uint64_t *len,
		       uint64_t max_len)
{
	uint8_t *buf;

	if (!strncmp(s, "hex:", 4)) {
		const char *h = s + 4;
		size_t n = strlen(h);

		if (n % 2)
			return fail(ps, "hex: needs an even number of digits");
		if (n / 2 > max_len)
			return fail(ps, "hex: %zu bytes do not fit in %llu", n / 2,
				    (unsigned long long)max_len);
		buf = malloc(n / 2 + 1);
		if (!buf)
			return -ENOMEM;
		for (size_t i = 0; i < n / 2; i++) {
			unsigned v;

			if (sscanf(h + 2 * i, "%2x", &v) != 1 ||
			    !strchr("0123456789abcdefABCDEF", h[2 * i]) ||
			    !strchr("0123456789abcdefABCDEF", h[2 * i + 1])) {
				free(buf);
				return fail(ps, "hex: '%.2s' is not a hex byte", h + 2 * i);
			}
			buf[i] = (uint8_t)v;
		}
		*out = buf;
		*len = n / 2;
		return 0;
	}

	uint64_t a = 0, b = 0, c = max_len;
	int kind;
	char *end;

	if (!strncmp(s, "pattern:", 8))
		kind = 0;
	else if (!strncmp(s, "fill:", 5))
		kind = 1;
	else if (!strncmp(s, "zero", 4))
		kind = 2;
	else
		return fail(ps, "'%s': bytes are hex:..., pattern:..., fill:... or zero", s);
	s = strchr(s, ':') ? strchr(s, ':') + 1 : "";
	errno = 0;
	if (kind == 0) {
		a = strtoull(s, &end, 0);
		if (*end == ':') {
			b = strtoull(end + 1, &end, 0);
			if (*end != ':')
				return fail(ps, "pattern:SEED:START:LEN needs all three");
			c = strtoull(end + 1, &end, 0);
		}
	} else if (kind == 1) {
		a = strtoull(s, &end, 0);
		if (*end == ':')
			c = strtoull(end + 1, &end, 0);
	} else {
		end = (char *)s;
		if (*s)
			c = strtoull(s, &end, 0);
	}
	if (errno || *end || (kind == 1 && a > 255))
		return fail(ps, "malformed bytes specification");
	if (c > max_len)
		return fail(ps, "%llu bytes do not fit in %llu", (unsigned long long)c,
			    (unsigned long long)max_len);
	buf = malloc(c + 1);
	if (!buf)
		return -ENOMEM;
	for (uint64_t i = 0; i < c; i++) {
		uint64_t k = b + i;

		if (kind == 0)
			buf[i] = (uint8_t)(a * 31 + k * 7 + (k >> 8) * 13);
		else
			buf[i] = kind == 1 ? (uint8_t)a : 0;
	}
	*out = buf;
	*len = c;
	return 0;
}

/* ---- Growing arrays ---- */

static void *grow(void *arr, unsigned n, size_t size)
{
	void *p = realloc(arr, (n + 1) * size);

	if (p)
		memset((char *)p + n * size, 0, size);
	return p;
}

/* Append one zeroed element to the array at @arrp (a pointer to the array pointer). */
static void *push(void *arrp, unsigned *n, size_t size)
{
	void **arr = arrp;
	void *p = grow(*arr, *n, size);

	if (!p)
		return NULL;
	*arr = p;
	return (char *)p + (size_t)(*n)++ * size;
}

#define PUSH(ps, arr, n) push(&(ps)->fx->arr, &(ps)->fx->n, sizeof(*(ps)->fx->arr))

static int find_mr(struct parser *ps, const char *name, unsigned *out)
{
	*out = 0;
	for (unsigned i = 0; i < ps->fx->n_mrs; i++)
		if (!strcmp(ps->fx->mrs[i].name, name)) {
			*out = i;
			return 0;
		}
	return fail(ps, "no MR named '%s' (declare it with mr first)", name);
}

static int find_qp(struct parser *ps, const char *name, unsigned *out)
{
	*out = 0;
	for (unsigned i = 0; i < ps->fx->n_qps; i++)
		if (!strcmp(ps->fx->qps[i].name, name)) {
			*out = i;
			return 0;
		}
	return fail(ps, "no QP named '%s' (declare it with qp first)", name);
}

static int find_peer(struct parser *ps, const char *name, unsigned *out)
{
	*out = 0;
	for (unsigned i = 0; i < ps->fx->n_peers; i++)
		if (!strcmp(ps->fx->peers[i].name, name)) {
			*out = i;
			return 0;
		}
	return fail(ps, "no peer named '%s'", name);
}

static int set_name(struct parser *ps, char *dst, const char *src)
{
	if (strlen(src) >= FX_NAME_MAX)
		return fail(ps, "name '%s' longer than %d characters", src, FX_NAME_MAX - 1);
	strcpy(dst, src);
	return 0;
}

/* Split "key=value"; Return: the value, NULL if @w has no '='. */
static char *split_kv(char *w)
{
	char *eq = strchr(w, '=');

	if (!eq)
		return NULL;
	*eq = 0;
	return eq + 1;
}

/* ---- Statements ---- */

static int st_local(struct parser *ps, char **w, int n)
{
	struct fixture *fx = ps->fx;
	bool mac = false, ip = false;
	int r = 0;

	fx->local_mtu = 1500;
	for (int i = 1; i < n && !r; i++) {
		char *v = split_kv(w[i]);

		if (!v)
			return fail(ps, "local: '%s' is not key=value", w[i]);
		if (!strcmp(w[i], "mac"))
			r = parse_mac(ps, v, fx->local_mac), mac = true;
		else if (!strcmp(w[i], "ip"))
			r = parse_ip(ps, v, fx->local_gid), ip = true;
		else if (!strcmp(w[i], "mtu"))
			r = parse_u32(ps, "mtu", v, 65000, &fx->local_mtu);
		else
			return fail(ps, "local: unknown key '%s'", w[i]);
	}
	if (!r && (!mac || !ip))
		return fail(ps, "local needs mac= and ip=");
	return r;
}

static int st_peer(struct parser *ps, char **w, int n)
{
	struct fx_peer *p;
	bool mac = false, ip = false;
	int r;

	if (n < 2 || strchr(w[1], '='))
		return fail(ps, "peer NAME mac= ip=");
	p = PUSH(ps, peers, n_peers);
	if (!p)
		return -ENOMEM;
	r = set_name(ps, p->name, w[1]);
	for (int i = 2; i < n && !r; i++) {
		char *v = split_kv(w[i]);

		if (!v)
			return fail(ps, "peer: '%s' is not key=value", w[i]);
		if (!strcmp(w[i], "mac"))
			r = parse_mac(ps, v, p->mac), mac = true;
		else if (!strcmp(w[i], "ip"))
			r = parse_ip(ps, v, p->gid), ip = true;
		else
			return fail(ps, "peer: unknown key '%s'", w[i]);
	}
	if (!r && (!mac || !ip))
		return fail(ps, "peer needs mac= and ip=");
	return r;
}

static int st_mr(struct parser *ps, char **w, int n)
{
	struct fx_mr *m;
	bool has_len = false, has_iova = false, has_access = false;
	char *init = NULL;
	uint64_t got;
	int r;

	if (n < 2 || strchr(w[1], '='))
		return fail(ps, "mr NAME len= iova= access= [rkey=] [init=]");
	m = PUSH(ps, mrs, n_mrs);
	if (!m)
		return -ENOMEM;
	r = set_name(ps, m->name, w[1]);
	for (int i = 2; i < n && !r; i++) {
		char *v = split_kv(w[i]);

		if (!v)
			return fail(ps, "mr: '%s' is not key=value", w[i]);
		if (!strcmp(w[i], "len"))
			r = parse_u64(ps, "len", v, &m->len), has_len = true;
		else if (!strcmp(w[i], "iova"))
			r = parse_u64(ps, "iova", v, &m->iova), has_iova = true;
		else if (!strcmp(w[i], "access"))
			r = parse_flags(ps, "access flag", access_names, v, &m->access), has_access = true;
		else if (!strcmp(w[i], "rkey"))
			r = parse_u32(ps, "rkey", v, UINT32_MAX, &m->rkey), m->has_rkey = true;
		else if (!strcmp(w[i], "init"))
			init = v;
		else
			return fail(ps, "mr: unknown key '%s'", w[i]);
	}
	if (r)
		return r;
	if (!has_len || !has_iova || !has_access)
		return fail(ps, "mr needs len=, iova= and access=");
	if (m->len == 0 || m->len > (1u << 30))
		return fail(ps, "mr %s: len must be 1 .. 1 GiB", m->name);
	m->init = calloc(1, m->len);
	m->expect = malloc(m->len);
	if (!m->init || !m->expect)
		return -ENOMEM;
	if (init) {
		uint8_t *bytes;

		r = parse_bytes(ps, init, &bytes, &got, m->len);
		if (r)
			return r;
		memcpy(m->init, bytes, got);
		free(bytes);
	}
	memcpy(m->expect, m->init, m->len);
	return 0;
}

static int st_qp(struct parser *ps, char **w, int n)
{
	struct fx_qp *q;
	bool has_type = false, has_qpn = false, has_access = false;
	int r, v = 0;

	if (n < 2 || strchr(w[1], '='))
		return fail(ps, "qp NAME type= qpn= dest_qp= ...");
	if (!ps->fx->n_peers)
		return fail(ps, "qp before any peer");
	q = PUSH(ps, qps, n_qps);
	if (!q)
		return -ENOMEM;
	r = set_name(ps, q->name, w[1]);
	q->mtu = 1024;
	q->max_rd_atomic = q->max_dest_rd_atomic = 4;
	q->min_rnr_timer = 12;
	q->timeout = 14;
	q->retry_cnt = q->rnr_retry = 7;
	q->hop_limit = 64;
	q->sq_depth = q->rq_depth = 256;
	q->expect_state = IBV_QPS_RTS;
	for (int i = 2; i < n && !r; i++) {
		char *val = split_kv(w[i]), *k = w[i];

		if (!val)
			return fail(ps, "qp: '%s' is not key=value", w[i]);
		if (!strcmp(k, "type")) {
			has_type = true;
			if (!strcmp(val, "RC"))
				q->type = IBV_QPT_RC;
			else if (!strcmp(val, "UC"))
				q->type = IBV_QPT_UC;
			else if (!strcmp(val, "UD"))
				q->type = IBV_QPT_UD;
			else if (!strcmp(val, "XRC_RECV"))
				q->type = IBV_QPT_XRC_RECV;
			else
				return fail(ps, "qp type '%s': RC, UC, UD or XRC_RECV", val);
		} else if (!strcmp(k, "qpn")) {
			r = parse_u32(ps, k, val, 0xffffff, &q->qpn), has_qpn = true;
		} else if (!strcmp(k, "dest_qp")) {
			r = parse_u32(ps, k, val, 0xffffff, &q->dest_qp);
		} else if (!strcmp(k, "peer")) {
			r = find_peer(ps, val, &q->peer);
		} else if (!strcmp(k, "rq_psn")) {
			r = parse_u32(ps, k, val, 0xffffff, &q->rq_psn);
		} else if (!strcmp(k, "sq_psn")) {
			r = parse_u32(ps, k, val, 0xffffff, &q->sq_psn);
		} else if (!strcmp(k, "mtu")) {
			r = parse_u32(ps, k, val, 4096, &q->mtu);
			if (!r && (q->mtu < 256 || (q->mtu & (q->mtu - 1))))
				return fail(ps, "mtu=%u: path MTU is 256, 512, 1024, 2048 or 4096", q->mtu);
		} else if (!strcmp(k, "access")) {
			r = parse_flags(ps, "access flag", access_names, val, &v);
			q->access = v;
			has_access = true;
		} else if (!strcmp(k, "max_rd_atomic")) {
			r = parse_u8(ps, k, val, RC_MAX_RD_ATOMIC, &q->max_rd_atomic);
		} else if (!strcmp(k, "max_dest_rd_atomic")) {
			r = parse_u8(ps, k, val, RC_MAX_RD_ATOMIC, &q->max_dest_rd_atomic);
		} else if (!strcmp(k, "min_rnr_timer")) {
			r = parse_u8(ps, k, val, 31, &q->min_rnr_timer);
		} else if (!strcmp(k, "timeout")) {
			r = parse_u8(ps, k, val, 31, &q->timeout);
		} else if (!strcmp(k, "retry_cnt")) {
			r = parse_u8(ps, k, val, 7, &q->retry_cnt);
		} else if (!strcmp(k, "rnr_retry")) {
			r = parse_u8(ps, k, val, 7, &q->rnr_retry);
		} else if (!strcmp(k, "tclass")) {
			r = parse_u8(ps, k, val, 255, &q->tclass);
		} else if (!strcmp(k, "hop_limit")) {
			r = parse_u8(ps, k, val, 255, &q->hop_limit);
		} else if (!strcmp(k, "qkey")) {
			r = parse_u32(ps, k, val, UINT32_MAX, &q->qkey);
		} else if (!strcmp(k, "sq_depth")) {
			r = parse_u32(ps, k, val, RC_MAX_QP_WR, &q->sq_depth);
		} else if (!strcmp(k, "rq_depth")) {
			r = parse_u32(ps, k, val, RC_MAX_QP_WR, &q->rq_depth);
		} else if (!strcmp(k, "srqn")) {
			r = parse_u32(ps, k, val, WIRE_SRQN_MASK, &q->srqn);
		} else {
			return fail(ps, "qp: unknown key '%s'", k);
		}
	}
	if (r)
		return r;
	if (!has_type || !has_qpn)
		return fail(ps, "qp needs type= and qpn=");
	if ((q->type == IBV_QPT_XRC_RECV) != (q->srqn != 0))
		return fail(ps, "qp: srqn= is for XRC_RECV, and XRC_RECV needs it");
	if (!has_access)
		q->access = q->type == IBV_QPT_RC || q->type == IBV_QPT_XRC_RECV ?
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC :
			q->type == IBV_QPT_UC ? IBV_ACCESS_REMOTE_WRITE : 0;
	for (unsigned i = 0; i + 1 < ps->fx->n_qps; i++)
		if (ps->fx->qps[i].qpn == q->qpn)
			return fail(ps, "QPN %#x used twice", q->qpn);
	return 0;
}

static int parse_sge(struct parser *ps, char *v, struct fx_action *a)
{
	char *c1 = strchr(v, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	struct fx_sge *s;
	int r;

	if (!c2)
		return fail(ps, "sge=%s: MR:OFFSET:LENGTH", v);
	if (a->nsge == FX_MAX_SGE)
		return fail(ps, "more than %d SGEs", FX_MAX_SGE);
	s = &a->sge[a->nsge++];
	*c1 = *c2 = 0;
	r = find_mr(ps, v, &s->mr);
	if (!r)
		r = parse_u64(ps, "sge offset", c1 + 1, &s->off);
	if (!r)
		r = parse_u32(ps, "sge length", c2 + 1, UINT32_MAX, &s->len);
	if (!r && s->off + s->len > ps->fx->mrs[s->mr].len)
		return fail(ps, "sge %s:%llu:%u is outside the MR", ps->fx->mrs[s->mr].name,
			    (unsigned long long)s->off, s->len);
	return r;
}

static int st_post(struct parser *ps, char **w, int n, struct fx_action *a)
{
	bool send = a->kind == FX_POST_SEND, has_wr_id = false, has_op = false;
	int r, v = 0;

	if (n < 2 || strchr(w[1], '='))
		return fail(ps, "%s QP wr_id= ...", send ? "post_send" : "post_recv");
	r = find_qp(ps, w[1], &a->qp);
	a->send_flags = IBV_SEND_SIGNALED;
	for (int i = 2; i < n && !r; i++) {
		char *val = split_kv(w[i]), *k = w[i];

		if (!val)
			return fail(ps, "'%s' is not key=value", w[i]);
		if (!strcmp(k, "wr_id")) {
			r = parse_u64(ps, k, val, &a->wr_id), has_wr_id = true;
		} else if (!strcmp(k, "sge")) {
			r = parse_sge(ps, val, a);
		} else if (!send) {
			return fail(ps, "post_recv: unknown key '%s'", k);
		} else if (!strcmp(k, "op")) {
			r = parse_name(ps, "work request opcode", wr_opcode_names, val, &v);
			a->opcode = (enum ibv_wr_opcode)v;
			has_op = true;
		} else if (!strcmp(k, "flags")) {
			r = parse_flags(ps, "send flag", send_flag_names, val, &v);
			a->send_flags = (unsigned)v;
		} else if (!strcmp(k, "remote")) {
			r = parse_u64(ps, k, val, &a->remote_addr);
		} else if (!strcmp(k, "rkey")) {
			r = parse_u32(ps, k, val, UINT32_MAX, &a->rkey);
		} else if (!strcmp(k, "imm")) {
			r = parse_u32(ps, k, val, UINT32_MAX, &a->imm);
		} else if (!strcmp(k, "invalidate")) {
			r = parse_u32(ps, k, val, UINT32_MAX, &a->invalidate);
		} else if (!strcmp(k, "compare")) {
			r = parse_u64(ps, k, val, &a->compare);
		} else if (!strcmp(k, "swap") || !strcmp(k, "add")) {
			r = parse_u64(ps, k, val, &a->swap_add);
		} else if (!strcmp(k, "ah")) {
			r = find_peer(ps, val, &a->ah_peer);
		} else if (!strcmp(k, "remote_qpn")) {
			r = parse_u32(ps, k, val, 0xffffff, &a->remote_qpn);
		} else if (!strcmp(k, "remote_qkey")) {
			r = parse_u32(ps, k, val, UINT32_MAX, &a->remote_qkey);
		} else {
			return fail(ps, "post_send: unknown key '%s'", k);
		}
	}
	if (!r && !has_wr_id)
		return fail(ps, "wr_id= missing");
	if (!r && send && !has_op)
		return fail(ps, "op= missing");
	return r;
}

static int st_poke(struct parser *ps, char **w, int n, struct fx_action *a)
{
	uint64_t len;
	int r;

	if (n != 4)
		return fail(ps, "poke MR OFFSET BYTES");
	r = find_mr(ps, w[1], &a->mr);
	if (!r)
		r = parse_u64(ps, "offset", w[2], &a->poke_off);
	if (r)
		return r;
	if (a->poke_off >= ps->fx->mrs[a->mr].len)
		return fail(ps, "poke offset outside the MR");
	r = parse_bytes(ps, w[3], &a->poke_data, &len, ps->fx->mrs[a->mr].len - a->poke_off);
	if (r)
		return r;
	a->poke_len = (uint32_t)len;
	/* What the memory should hold at the end starts from the poked bytes. */
	memcpy(ps->fx->mrs[a->mr].expect + a->poke_off, a->poke_data, a->poke_len);
	return 0;
}

static int st_action(struct parser *ps, char **w, int n, bool timed, uint64_t t_ns)
{
	struct fx_action *a = PUSH(ps, actions, n_actions);

	if (!a)
		return -ENOMEM;
	a->line = ps->line;
	a->timed = timed;
	a->t_ns = t_ns;
	if (!strcmp(w[0], "post_recv")) {
		a->kind = FX_POST_RECV;
		return st_post(ps, w, n, a);
	}
	if (!strcmp(w[0], "post_send")) {
		a->kind = FX_POST_SEND;
		return st_post(ps, w, n, a);
	}
	if (!strcmp(w[0], "dereg")) {
		a->kind = FX_DEREG;
		if (n != 2)
			return fail(ps, "dereg MR");
		return find_mr(ps, w[1], &a->mr);
	}
	if (!strcmp(w[0], "poke")) {
		a->kind = FX_POKE;
		return st_poke(ps, w, n, a);
	}
	ps->fx->n_actions--;
	return fail(ps, "'%s' is not an action (post_recv, post_send, dereg, poke)", w[0]);
}

static int st_expect_cqe(struct parser *ps, char **w, int n)
{
	struct fx_cqe *c;
	bool has_wr_id = false, has_status = false;
	int r, v = 0;

	if (n < 4 || (strcmp(w[3], "send") && strcmp(w[3], "recv")))
		return fail(ps, "expect cqe QP send|recv wr_id= status= ...");
	c = PUSH(ps, cqes, n_cqes);
	if (!c)
		return -ENOMEM;
	c->line = ps->line;
	c->recv = !strcmp(w[3], "recv");
	r = find_qp(ps, w[2], &c->qp);
	for (int i = 4; i < n && !r; i++) {
		char *val = split_kv(w[i]), *k = w[i];

		if (!val)
			return fail(ps, "'%s' is not key=value", w[i]);
		if (!strcmp(k, "wr_id")) {
			r = parse_u64(ps, k, val, &c->wr_id), has_wr_id = true;
		} else if (!strcmp(k, "status")) {
			r = parse_name(ps, "completion status", wc_status_names, val, &v);
			c->status = (enum ibv_wc_status)v;
			has_status = true;
		} else if (!strcmp(k, "opcode")) {
			r = parse_name(ps, "completion opcode", wc_opcode_names, val, &v);
			c->opcode = (enum ibv_wc_opcode)v;
			c->has_opcode = true;
		} else if (!strcmp(k, "byte_len")) {
			r = parse_u32(ps, k, val, UINT32_MAX, &c->byte_len), c->has_byte_len = true;
		} else if (!strcmp(k, "flags")) {
			r = parse_flags(ps, "completion flag", wc_flag_names, val, &v);
			c->flags = (unsigned)v;
		} else if (!strcmp(k, "imm")) {
			r = parse_u32(ps, k, val, UINT32_MAX, &c->imm);
		} else if (!strcmp(k, "invalidated_rkey")) {
			r = parse_u32(ps, k, val, UINT32_MAX, &c->invalidated_rkey);
		} else if (!strcmp(k, "src_qp")) {
			r = parse_u32(ps, k, val, 0xffffff, &c->src_qp);
		} else {
			return fail(ps, "expect cqe: unknown key '%s'", k);
		}
	}
	if (r)
		return r;
	if (!has_wr_id || !has_status)
		return fail(ps, "expect cqe needs wr_id= and status=");
	if (c->status == IBV_WC_SUCCESS && !c->has_opcode)
		return fail(ps, "a successful completion needs opcode=");
	if (c->status == IBV_WC_SUCCESS && c->recv && !c->has_byte_len)
		return fail(ps, "a successful receive completion needs byte_len=");
	return 0;
}

static int st_expect(struct parser *ps, char **w, int n)
{
	struct fixture *fx = ps->fx;
	int r, v = 0;

	if (n < 2)
		return fail(ps, "expect what? (cqe, mem, counter, state, event)");
	if (!strcmp(w[1], "cqe"))
		return st_expect_cqe(ps, w, n);
	if (!strcmp(w[1], "mem")) {
		unsigned mr = 0;
		uint64_t off = 0, len;
		uint8_t *bytes;

		if (n != 5)
			return fail(ps, "expect mem MR OFFSET BYTES");
		r = find_mr(ps, w[2], &mr);
		if (!r)
			r = parse_u64(ps, "offset", w[3], &off);
		if (r)
			return r;
		if (off >= fx->mrs[mr].len)
			return fail(ps, "offset %#llx outside MR %s", (unsigned long long)off, w[2]);
		r = parse_bytes(ps, w[4], &bytes, &len, fx->mrs[mr].len - off);
		if (r)
			return r;
		memcpy(fx->mrs[mr].expect + off, bytes, len);
		free(bytes);
		return 0;
	}
	if (!strcmp(w[1], "counter")) {
		struct fx_counter *c;

		if (n != 4)
			return fail(ps, "expect counter NAME VALUE");
		c = PUSH(ps, counters, n_counters);
		if (!c)
			return -ENOMEM;
		c->line = ps->line;
		r = set_name(ps, c->name, w[2]);
		return r ? r : parse_u64(ps, "counter value", w[3], &c->value);
	}
	if (!strcmp(w[1], "state")) {
		unsigned qp = 0;

		if (n != 4)
			return fail(ps, "expect state QP STATE");
		r = find_qp(ps, w[2], &qp);
		if (!r)
			r = parse_name(ps, "QP state", qp_state_names, w[3], &v);
		if (!r)
			fx->qps[qp].expect_state = (enum ibv_qp_state)v;
		return r;
	}
	if (!strcmp(w[1], "event")) {
		struct fx_event *e;

		if (n != 4)
			return fail(ps, "expect event QP EVENT");
		e = PUSH(ps, events, n_events);
		if (!e)
			return -ENOMEM;
		r = find_qp(ps, w[2], &e->qp);
		if (!r)
			r = parse_name(ps, "event", event_names, w[3], &v);
		e->type = (enum ibv_event_type)v;
		return r;
	}
	return fail(ps, "expect %s: unknown (cqe, mem, counter, state, event)", w[1]);
}

static int statement(struct parser *ps, char **w, int n)
{
	struct fixture *fx = ps->fx;

	if (!ps->seen_version) {
		if (n != 2 || strcmp(w[0], "uroce-fixture"))
			return fail(ps, "the first statement must be 'uroce-fixture 1'");
		if (strcmp(w[1], "1"))
			return fail(ps, "format version %s is not supported (this uroce reads 1)", w[1]);
		ps->seen_version = true;
		return 0;
	}
	if (!strcmp(w[0], "name"))
		return n == 2 ? set_name(ps, fx->name, w[1]) : fail(ps, "name NAME");
	if (!strcmp(w[0], "summary") || !strcmp(w[0], "spec") || !strcmp(w[0], "role"))
		return 0;	/* documentation */
	if (!strcmp(w[0], "timing")) {
		if (n == 2 && !strcmp(w[1], "window"))
			fx->timing = FX_TIMING_WINDOW;
		else if (n == 2 && !strcmp(w[1], "stream"))
			fx->timing = FX_TIMING_STREAM;
		else
			return fail(ps, "timing window|stream");
		return 0;
	}
	if (!strcmp(w[0], "end")) {
		fx->has_end = true;
		return n == 2 ? parse_time(ps, w[1], &fx->end_ns) : fail(ps, "end TIME");
	}
	if (!strcmp(w[0], "ignore")) {
		unsigned mr = 0;
		int r;

		if (n != 2 || strncmp(w[1], "mem.", 4))
			return fail(ps, "ignore mem.MR");
		r = find_mr(ps, w[1] + 4, &mr);
		if (!r)
			fx->mrs[mr].ignore = true;
		return r;
	}
	if (!strcmp(w[0], "local"))
		return st_local(ps, w, n);
	if (!strcmp(w[0], "peer"))
		return st_peer(ps, w, n);
	if (!strcmp(w[0], "mr"))
		return st_mr(ps, w, n);
	if (!strcmp(w[0], "qp"))
		return st_qp(ps, w, n);
	if (!strcmp(w[0], "expect"))
		return st_expect(ps, w, n);
	if (!strcmp(w[0], "at")) {
		uint64_t t;
		int r;

		if (n < 3)
			return fail(ps, "at TIME ACTION ...");
		r = parse_time(ps, w[1], &t);
		return r ? r : st_action(ps, w + 2, n - 2, true, t);
	}
	return st_action(ps, w, n, false, 0);
}

/* "dir/NAME.fixture" -> "dir/NAME<suffix>" */
static void sibling(char *dst, size_t cap, const char *path, const char *suffix)
{
	size_t n = strlen(path);

	if (n > 8 && !strcmp(path + n - 8, ".fixture"))
		n -= 8;
	snprintf(dst, cap, "%.*s%s", (int)n, path, suffix);
}

int fixture_load(const char *path, struct fixture *fx, char *err, size_t errlen)
{
	struct parser ps = { .fx = fx, .path = path, .err = err, .errlen = errlen };
	char *line = NULL;
	size_t cap = 0;
	const char *base;
	FILE *f;
	int r = 0;

	memset(fx, 0, sizeof(*fx));
	snprintf(fx->path, sizeof(fx->path), "%s", path);
	sibling(fx->in_pcap, sizeof(fx->in_pcap), path, ".in.pcap");
	sibling(fx->out_pcap, sizeof(fx->out_pcap), path, ".out.pcap");
	f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	while (!r && getline(&line, &cap, f) >= 0) {
		char *w[MAX_WORDS], *save = NULL, *hash;
		int n = 0;

		ps.line++;
		hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		for (char *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
			if (n == MAX_WORDS) {
				r = fail(&ps, "too many words");
				break;
			}
			w[n++] = t;
		}
		if (!r && n)
			r = statement(&ps, w, n);
	}
	free(line);
	fclose(f);
	if (r)
		goto err;
	ps.line = 0;
	if (!ps.seen_version) {
		r = fail(&ps, "empty: a fixture starts with 'uroce-fixture 1'");
		goto err;
	}
	base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (!fx->name[0] || strncmp(base, fx->name, strlen(fx->name)) ||
	    strcmp(base + strlen(fx->name), ".fixture")) {
		r = fail(&ps, "the name statement must match the file name (%s)", base);
		goto err;
	}
	if (!fx->local_mtu) {
		r = fail(&ps, "no local statement");
		goto err;
	}
	return 0;
err:
	fixture_free(fx);
	return r;
}

void fixture_free(struct fixture *fx)
{
	for (unsigned i = 0; i < fx->n_mrs; i++) {
		free(fx->mrs[i].init);
		free(fx->mrs[i].expect);
	}
	for (unsigned i = 0; i < fx->n_actions; i++)
		free(fx->actions[i].poke_data);
	free(fx->peers);
	free(fx->mrs);
	free(fx->qps);
	free(fx->actions);
	free(fx->cqes);
	free(fx->counters);
	free(fx->events);
	memset(fx, 0, sizeof(*fx));
}
