/* SPDX-License-Identifier: MIT */
/* UROCE_PCAP=FILE: every RoCE frame a process sends and receives, in a buffered pcap file. */
#ifndef UROCE_DP_PCAP_H
#define UROCE_DP_PCAP_H

#include <stddef.h>
#include <stdint.h>

struct dp_pcap;

/**
 * dp_pcap_get() - the process's recorder, from the environment.
 *
 * UROCE_PCAP names the file ("%p" in it becomes the process ID); unset or
 * empty: no recording (NULL, *err stays empty).  Every port of the process
 * shares one recorder (reference counted).
 * Return: the recorder, or NULL with one line in @err when the file cannot be created.
 */
struct dp_pcap *dp_pcap_get(char *err, size_t errlen);
void dp_pcap_put(struct dp_pcap *pc);

/* Open @path directly (tests and tools); the same as dp_pcap_get() otherwise. */
struct dp_pcap *dp_pcap_open(const char *path, char *err, size_t errlen);

/*
 * Append frames with one timestamp (now); nanosecond pcap format.  Copies
 * into a 1 MiB buffer, written out when full, on dp_pcap_flush() and at
 * the last dp_pcap_put().  Thread safe.
 */
void dp_pcap_write(struct dp_pcap *pc, const void *const *frames, const uint32_t *lens,
		   unsigned n);
void dp_pcap_flush(struct dp_pcap *pc);

#endif
