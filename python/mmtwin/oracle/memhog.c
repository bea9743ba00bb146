/*
 * memhog: the guest-side workload of `mmtwin oracle run`.
 *
 *   memhog MIB THREADS CPULIST PASSES [COMMAND]
 *
 * Splits MIB mebibytes evenly over THREADS threads. Thread i binds itself
 * to the i-th CPU of CPULIST (comma-separated ids) with sched_setaffinity,
 * maps its share of anonymous private memory and writes one byte into each
 * 4 KiB page, so each page is faulted in (and allocated) by a thread
 * running on its CPU: the kernel's default local allocation policy picks
 * that CPU's node first. It does so PASSES times over its share, in the
 * same order each time; with swap, a later pass faults back in the pages
 * reclaim swapped out meanwhile. When every thread has finished, one line goes to
 * stdout; then, if COMMAND is given, it runs under /bin/sh -c while the
 * memory is still held (the oracle takes its "during" snapshot there), and
 * the process exits, which frees the memory again.
 *
 * Written for mmtwin; it is deliberately tiny and has no dependencies
 * beyond libc and pthreads, so it links statically.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guestlib.h"

#define PAGE 4096UL
#define MAX_THREADS 256

struct job {
	int index;
	int cpu;
	size_t bytes;
	int passes;
	size_t pages_touched;
	int failed;
};

static void *hog(void *arg)
{
	struct job *job = arg;
	cpu_set_t set;
	unsigned char *area;
	size_t off;
	int pass;

	CPU_ZERO(&set);
	CPU_SET(job->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		fprintf(stderr, "memhog: thread %d: cannot run on cpu %d: %s\n",
			job->index, job->cpu, strerror(errno));
		job->failed = 1;
		return NULL;
	}
	if (job->bytes == 0)
		return NULL;
	area = mmap(NULL, job->bytes, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED) {
		fprintf(stderr, "memhog: thread %d: mmap of %zu bytes failed: %s\n",
			job->index, job->bytes, strerror(errno));
		job->failed = 1;
		return NULL;
	}
	for (pass = 0; pass < job->passes; pass++) {
		for (off = 0; off < job->bytes; off += PAGE) {
			area[off] = (unsigned char)(off / PAGE + pass);
			job->pages_touched++;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static struct job jobs[MAX_THREADS];
	static pthread_t tids[MAX_THREADS];
	int cpus[MAX_THREADS];
	struct timespec t0, t1;
	unsigned long mib;
	size_t total_pages, touched = 0;
	int threads, ncpus, passes, i, failed = 0;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: memhog MIB THREADS CPULIST PASSES [COMMAND]\n");
		return 2;
	}
	mib = strtoul(argv[1], NULL, 10);
	threads = atoi(argv[2]);
	ncpus = parse_cpus(argv[3], cpus, MAX_THREADS);
	passes = atoi(argv[4]);
	if (threads < 1 || threads > MAX_THREADS || ncpus != threads) {
		fprintf(stderr, "memhog: need 1..%d threads and one cpu per thread\n",
			MAX_THREADS);
		return 2;
	}
	if (passes < 1 || passes > 1000) {
		fprintf(stderr, "memhog: need 1..1000 passes\n");
		return 2;
	}
	total_pages = mib * (1024 * 1024 / PAGE);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < threads; i++) {
		/* Spread the remainder one page at a time over the first threads. */
		size_t pages = total_pages / threads +
			       ((size_t)i < total_pages % threads ? 1 : 0);
		jobs[i].index = i;
		jobs[i].cpu = cpus[i];
		jobs[i].bytes = pages * PAGE;
		jobs[i].passes = passes;
		if (pthread_create(&tids[i], NULL, hog, &jobs[i]) != 0) {
			fprintf(stderr, "memhog: cannot start thread %d\n", i);
			return 1;
		}
	}
	for (i = 0; i < threads; i++) {
		pthread_join(tids[i], NULL);
		touched += jobs[i].pages_touched;
		failed |= jobs[i].failed;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("memhog: touched %zu pages (%lu MiB, %d pass%s) with %d threads in %.3f s\n",
	       touched, mib, passes, passes == 1 ? "" : "es", threads,
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	fflush(stdout);
	if (argc == 6 && run_command("memhog", argv[5]) != 0)
		failed = 1;
	return failed ? 1 : 0;
}
