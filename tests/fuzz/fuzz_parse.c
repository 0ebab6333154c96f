// SPDX-License-Identifier: MIT
/* libFuzzer target: any bytes through wire_parse() and every decoder output mode. */
#include "fuzz_checks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_check_parse(data, size);
	return 0;
}
