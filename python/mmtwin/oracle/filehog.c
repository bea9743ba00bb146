/*
 * filehog: the guest-side file workloads of `mmtwin oracle run`.
 *
 *   filehog mmapstream DIR MIB PROCS CPULIST [COMMAND]
 *
 * The streaming mapped writer, as the twin's `mmapstream` workload has it
 * (its stage 1, MMTests' vmscan-file-mmap-write built from usemem -j 4096):
 * PROCS processes are forked; process i binds itself to the i-th CPU of
 * CPULIST, creates DIR/sparse-i, sizes it to its share of MIB mebibytes
 * with ftruncate (a sparse file: no block is written), maps it shared and
 * writable, and stores one word at the start of every 4 KiB page in
 * order, so every page is allocated, dirtied through a write fault and
 * left to writeback and reclaim. It then unmaps the file and exits. When
 * every process has exited one line goes to stdout; COMMAND, if given,
 * runs under /bin/sh -c (the oracle's "during" snapshot: the files'
 * pages still in the page cache), and then the files are removed (the
 * script's `rm sparse-*`).
 *
 * Written for mmtwin; libc only, so it links statically.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guestlib.h"

#define PAGE 4096UL
#define MAX_PROCS 256
#define MAX_MIB (1UL << 30)	/* a petabyte: far beyond any disk the oracle makes */


/* One mapped writer: the body of a forked process. */
static int mapped_writer(const char *path, size_t bytes, int cpu)
{
	cpu_set_t set;
	unsigned long *area;
	size_t off;
	int fd;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		fprintf(stderr, "filehog: cannot run on cpu %d: %s\n", cpu, strerror(errno));
		return 1;
	}
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "filehog: cannot create %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (ftruncate(fd, (off_t)bytes) != 0) {
		fprintf(stderr, "filehog: cannot size %s to %zu bytes: %s\n", path, bytes, strerror(errno));
		return 1;
	}
	if (bytes == 0)
		return close(fd) != 0;
	area = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (area == MAP_FAILED) {
		fprintf(stderr, "filehog: cannot map %s: %s\n", path, strerror(errno));
		return 1;
	}
	for (off = 0; off < bytes; off += PAGE)
		area[off / sizeof(*area)] = off / PAGE + 1;
	if (munmap(area, bytes) != 0 || close(fd) != 0) {
		fprintf(stderr, "filehog: cannot unmap or close %s: %s\n", path, strerror(errno));
		return 1;
	}
	return 0;
}

static int mmapstream(int argc, char **argv)
{
	static int cpus[MAX_PROCS];
	static pid_t pids[MAX_PROCS];
	char path[4096];
	const char *dir;
	char *end;
	struct timespec t0, t1;
	unsigned long mib;
	size_t total_pages;
	int procs, ncpus, i, started, failed = 0;

	if (argc != 6 && argc != 7) {
		fprintf(stderr, "usage: filehog mmapstream DIR MIB PROCS CPULIST [COMMAND]\n");
		return 2;
	}
	dir = argv[2];
	errno = 0;
	mib = strtoul(argv[3], &end, 10);
	if (errno != 0 || end == argv[3] || *end != '\0' || mib == 0 || mib > MAX_MIB) {
		fprintf(stderr, "filehog: MIB must be 1..%lu, not %s\n", MAX_MIB, argv[3]);
		return 2;
	}
	procs = (int)strtol(argv[4], &end, 10);
	if (*end != '\0')
		procs = 0;
	ncpus = parse_cpus(argv[5], cpus, MAX_PROCS);
	if (procs < 1 || procs > MAX_PROCS || ncpus != procs) {
		fprintf(stderr, "filehog: need 1..%d processes and one cpu per process\n", MAX_PROCS);
		return 2;
	}
	total_pages = mib * (1024 * 1024 / PAGE);
	started = procs;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < procs; i++) {
		/* The remainder goes one page at a time to the first processes. */
		size_t pages = total_pages / procs + ((size_t)i < total_pages % procs ? 1 : 0);

		snprintf(path, sizeof(path), "%s/sparse-%d", dir, i);
		pids[i] = fork();
		if (pids[i] < 0) {
			fprintf(stderr, "filehog: cannot fork process %d: %s\n", i, strerror(errno));
			failed = 1;
			started = i;	/* wait for those already running, then remove their files */
			break;
		}
		if (pids[i] == 0)
			_exit(mapped_writer(path, pages * PAGE, cpus[i]));
	}
	for (i = 0; i < started; i++) {
		int status;

		if (waitpid(pids[i], &status, 0) < 0) {
			failed = 1;
		} else if (WIFSIGNALED(status)) {
			/* SIGBUS: the disk is full at a write fault; SIGKILL: the OOM killer. */
			fprintf(stderr, "filehog: process %d killed by signal %d%s\n", i, WTERMSIG(status),
				WTERMSIG(status) == SIGKILL ? " (the OOM killer?)" :
				WTERMSIG(status) == SIGBUS ? " (no room left on the disk?)" : "");
			failed = 1;
		} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			failed = 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!failed) {
		printf("filehog: mmapstream wrote %zu pages (%lu MiB) through %d shared mappings in %.3f s\n",
		       total_pages, mib, procs,
		       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
		fflush(stdout);
		if (argc == 7 && run_command("filehog", argv[6]) != 0)
			failed = 1;
	}
	for (i = 0; i < procs; i++) {
		snprintf(path, sizeof(path), "%s/sparse-%d", dir, i);
		if (unlink(path) != 0 && errno != ENOENT) {
			fprintf(stderr, "filehog: cannot remove %s: %s\n", path, strerror(errno));
			failed = 1;
		}
	}
	return failed;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "mmapstream") == 0)
		return mmapstream(argc, argv);
	fprintf(stderr, "usage: filehog mmapstream DIR MIB PROCS CPULIST [COMMAND]\n");
	return 2;
}
