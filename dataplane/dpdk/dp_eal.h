/* SPDX-License-Identifier: MIT */
/* DPDK's EAL inside a verbs process: started once, lazily, with quiet logs. */
#ifndef UROCE_DP_EAL_H
#define UROCE_DP_EAL_H

#include <stddef.h>
#include <stdint.h>

#include "uroce/config.h"

/**
 * dp_eal_start() - start the EAL on first use in this process.
 * @cfg: configuration of the device being opened (EAL arguments, PCI address).
 *
 * Later calls return the first call's result: rte_eal_init() cannot be
 * retried in one process, so a failure is remembered with its message.
 * The calling thread's CPU affinity is the same afterwards; DPDK's log goes
 * to an in-memory tail (dp_eal_log_tail()), and nothing reaches stdout or
 * stderr unless UROCE_DEBUG is set.
 * Return: 0, or -errno with one line in @err: what failed, why, the fix.
 */
int dp_eal_start(const struct host_link_cfg *cfg, char *err, size_t errlen);

/*
 * Forget DPDK log lines seen so far; dp_eal_log_tail() then reports only
 * what a following DPDK call logged.
 */
void dp_eal_log_mark(void);

/* Last error-looking line DPDK logged since the mark, "" if none. */
void dp_eal_log_tail(char *buf, size_t len);

/*
 * Monotonic nanoseconds from the TSC (invariant on every CPU DPDK runs
 * on), for the engine clock and the progress loop: a fraction of
 * clock_gettime()'s cost in a VM.  Valid once the EAL runs; before that,
 * and where DPDK cannot tell the TSC rate, CLOCK_MONOTONIC.
 */
uint64_t dp_clock_ns(void);
/* CLOCK_MONOTONIC in nanoseconds (a system call: control paths only). */
uint64_t dp_mono_ns(void);

/*
 * Give the calling thread an EAL lcore id, so mempool caches serve it (a
 * non-EAL thread takes every buffer from the shared ring).  Return: 0 or
 * -errno; dp_eal_thread_unregister() before the thread ends.
 */
int dp_eal_thread_register(void);
void dp_eal_thread_unregister(void);

#endif
