// SPDX-License-Identifier: MIT
/* libFuzzer target: parse -> build -> parse must reproduce the packet view. */
#include "fuzz_checks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_check_roundtrip(data, size);
	return 0;
}
