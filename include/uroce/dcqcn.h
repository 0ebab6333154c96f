/* SPDX-License-Identifier: MIT */
/* DCQCN settings: one list for the engine, the device configuration and the docs. */
#ifndef UROCE_DCQCN_H
#define UROCE_DCQCN_H

#include <stdbool.h>
#include <stdint.h>

/*
 * X(name, default, min, max, meaning).  The defaults are ConnectX's (mlx5
 * firmware, NVIDIA's "DCQCN parameters"); names as mlx5's debugfs
 * cc_params, the rates in Mbit/s, the times in microseconds, with
 * line_rate (the rate a QP starts at and returns to) as uroce's own.
 */
#define DCQCN_PARAMS(X)							\
	X(rpg_time_reset, 300, 1, 10000000,				\
	  "us without a CNP between two timer rate increases")		\
	X(rpg_byte_reset, 32767, 1, 1000000000,				\
	  "bytes sent without a CNP between two byte-counter rate increases") \
	X(rpg_threshold, 1, 1, 31,					\
	  "increase events of each counter spent in fast recovery")	\
	X(rpg_ai_rate, 5, 1, 1000000, "Mbit/s added to the target by an additive increase") \
	X(rpg_hai_rate, 50, 1, 1000000, "Mbit/s added to the target by a hyper increase") \
	X(rpg_gd, 11, 10, 20, "a cut takes alpha / 2^(rpg_gd - 10) of the rate") \
	X(rpg_min_dec_fac, 50, 1, 100, "a cut keeps at least this percentage of the rate") \
	X(rpg_min_rate, 1, 1, 1000000, "Mbit/s the rate never goes below") \
	X(dce_tcp_g, 1019, 1, 1023, "alpha keeps dce_tcp_g/1024 of itself per update") \
	X(dce_tcp_rtt, 1, 1, 10000000, "us between two alpha updates") \
	X(rate_reduce_monitor_period, 4, 1, 10000000, "us at least between two rate cuts") \
	X(initial_alpha_value, 1023, 1, 1023, "alpha (of 1023) the first CNP starts from") \
	X(line_rate, 100000, 1, 1000000, "Mbit/s of a QP no CNP has slowed")		\
	X(min_time_between_cnps, 50, 1, 10000000,					\
	  "us at least between two CNPs a responder QP sends (the notification point's)")

/* Zero in a field: its default. */
struct dcqcn_cfg {
	bool		on;	/* the requester reacts to CNPs; off: it only counts them */
#define DCQCN_FIELD(name, def, min, max, what) uint32_t name;
	DCQCN_PARAMS(DCQCN_FIELD)
#undef DCQCN_FIELD
};

#endif
