/* SPDX-License-Identifier: MIT */
/* Prototypes of every Check suite listed in suites.def. */
#ifndef UROCE_UNIT_SUITES_H
#define UROCE_UNIT_SUITES_H

#include <check.h>

#define UNIT_SUITE(name) Suite *name##_suite(void);
#include "suites.def"
#undef UNIT_SUITE

#endif
