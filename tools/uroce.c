// SPDX-License-Identifier: MIT
/* The uroce command: dispatches `uroce SUBCOMMAND ARGS` to the cmd_*.c files. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static const struct {
	const char *name, *usage, *summary;
	int (*run)(int argc, char **argv);
} commands[] = {
#define UROCE_COMMAND(n, u, s) { #n, u, s, cmd_##n },
#include "commands.def"
#undef UROCE_COMMAND
};

static void usage(FILE *out)
{
	fprintf(out, "usage: uroce COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  uroce %-40s %s\n", commands[i].usage, commands[i].summary);
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "uroce: unknown command '%s' (uroce --help lists them)\n", argv[1]);
	return 2;
}
