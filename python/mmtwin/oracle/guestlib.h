/*
 * guestlib.h: what the oracle's guest programs (memhog.c, filehog.c) share.
 * Each includes it once; it is compiled with them, never on its own.
 *
 * Written for mmtwin; libc only.
 */
#ifndef MMTWIN_GUESTLIB_H
#define MMTWIN_GUESTLIB_H

#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

/* Run COMMAND with /bin/sh -c and wait for it (its exit status, 1 when it
 * could not run); posix_spawn does not copy the caller's page tables the
 * way fork would. PROG names the caller in messages. */
static int run_command(const char *prog, const char *command)
{
	char *args[] = { "sh", "-c", (char *)command, NULL };
	pid_t pid;
	int status, err;

	err = posix_spawn(&pid, "/bin/sh", NULL, NULL, args, environ);
	if (err != 0) {
		fprintf(stderr, "%s: cannot run %s: %s\n", prog, command, strerror(err));
		return 1;
	}
	if (waitpid(pid, &status, 0) < 0)
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* Parse a comma-separated list of CPU ids into CPUS (at most MAX): how
 * many, or -1 when the text is not such a list. */
static int parse_cpus(const char *text, int *cpus, int max)
{
	int n = 0;
	const char *p = text;
	char *end;

	while (*p && n < max) {
		long v = strtol(p, &end, 10);
		if (end == p || v < 0)
			return -1;
		cpus[n++] = (int)v;
		p = end;
		if (*p == ',')
			p++;
		else if (*p)
			return -1;
	}
	return n;
}

#endif
