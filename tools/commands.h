/* SPDX-License-Identifier: MIT */
/* Entry points of the uroce subcommands: argv[0] is the subcommand's name. */
#ifndef UROCE_TOOLS_COMMANDS_H
#define UROCE_TOOLS_COMMANDS_H

#define UROCE_COMMAND(n, u, s) int cmd_##n(int argc, char **argv);
#include "commands.def"
#undef UROCE_COMMAND

/* Removes the run directory a deleted namespace of the same name left (cmd_link.c). */
void link_purge_stale(void);

#endif
