/* SPDX-License-Identifier: MIT */
/* UROCE_PCAP=FILE: every RoCE frame a process sends and receives, in a buffered pcap file. */
#ifndef UROCE_HOST_CAPTURE_H
#define UROCE_HOST_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

struct host_capture;

/**
 * host_capture_get() - the process's recorder, from the environment.
 *
 * UROCE_PCAP names the file ("%p" in it becomes the process ID); unset or
 * empty: no recording (NULL, *err stays empty).  Every port of the process
 * shares one recorder (reference counted).
 * Return: the recorder, or NULL with one line in @err when the file cannot be created.
 */
struct host_capture *host_capture_get(char *err, size_t errlen);
void host_capture_put(struct host_capture *pc);

/* Open @path directly (tests and tools); the same as host_capture_get() otherwise. */
struct host_capture *host_capture_open(const char *path, char *err, size_t errlen);

/*
 * Append frames with one timestamp (now); nanosecond pcap format.  Copies
 * into a 1 MiB buffer, written out when full, on host_capture_flush() and at
 * the last host_capture_put().  Thread safe.
 */
void host_capture_write(struct host_capture *pc, const void *const *frames, const uint32_t *lens,
		   unsigned n);
void host_capture_flush(struct host_capture *pc);

#endif
