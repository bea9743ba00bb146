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
 *   filehog fsmark DIR THREADS CPULIST DIRS SUBDIRS PER_SUBDIR FILES ITERATIONS FILE_BYTES WRITE_BYTES [COMMAND]
 *
 * fs_mark as the twin's `fsmark` workload has it (-d x DIRS, -D SUBDIRS,
 * -N PER_SUBDIR, -n FILES, -L ITERATIONS, -t THREADS, -s FILE_BYTES,
 * -w WRITE_BYTES, -S0, files kept): each iteration forks THREADS
 * processes, each allowed on every CPU of CPULIST; process t creates FILES
 * files in DIR/d<t % DIRS>/s<k>, starting at subdirectory k = the wall
 * clock's seconds modulo SUBDIRS and moving to the next after PER_SUBDIR
 * files of the iteration (fs_mark 3.3's setup() and setup_file_name()
 * with -N), writes each with write() calls
 * of WRITE_BYTES up to FILE_BYTES, and closes it (no fsync); the iteration
 * ends when all have exited. Then the summary line, and COMMAND.
 *
 *   filehog largedd DIR TAR_BYTES COPIES DD_BYTES DOWNLOAD_MIB_S CPULIST [COMMAND]
 *
 * LARGE DD as the twin's `largedd` workload has it (MMTests 2011): one
 * process, allowed on every CPU of CPULIST, "downloads" DIR/tarfile,
 * writing TAR_BYTES in 64 KiB pieces, each not before the network would
 * have delivered it counting from when the one before began (a writer held
 * up by the kernel does not catch up in a burst), then
 * copies it COPIES times to DIR/copy-i with read() and write() calls of
 * DD_BYTES (dd bs=), opening the source afresh for each copy, and prints
 * the seconds each phase took; COMMAND, if given, runs (the oracle's
 * "during" snapshot, the copies still there), and then the copies are
 * deleted (the third phase); the tarfile stays.
 *
 *   filehog directwrite PATH BYTES BLOCK
 *
 * Writes BYTES bytes of zeros to PATH (a block device under /dev, which
 * must exist, or a file it creates) in writes of BLOCK bytes with O_DIRECT, so each goes to the
 * disk and none to the page cache, and prints how long they took by the
 * monotonic clock: the oracle's measure of the guest's disk.
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
#include <sys/stat.h>
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

/* Wait for process i of the workload: 0 when it exited with status 0. */
static int reap(const char *what, int i, pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) < 0)
		return 1;
	if (WIFSIGNALED(status)) {
		/* SIGBUS: the disk is full at a write fault; SIGKILL: the OOM killer. */
		fprintf(stderr, "filehog: %s process %d killed by signal %d%s\n", what, i, WTERMSIG(status),
			WTERMSIG(status) == SIGKILL ? " (the OOM killer?)" :
			WTERMSIG(status) == SIGBUS ? " (no room left on the disk?)" : "");
		return 1;
	}
	return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
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
	for (i = 0; i < started; i++)
		failed |= reap("mmapstream", i, pids[i]);
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

static long parse_count(const char *text, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v < 0 || v > max)
		return -1;
	return v;
}

/* Write `n` bytes of `buf` to `fd`, all of them. */
static int write_all(int fd, const char *buf, long n, const char *path)
{
	while (n > 0) {
		ssize_t w = write(fd, buf, (size_t)n);

		if (w <= 0) {
			fprintf(stderr, "filehog: cannot write %s: %s\n", path, w < 0 ? strerror(errno) : "short write");
			return 1;
		}
		buf += w;
		n -= w;
	}
	return 0;
}

/* Allow the calling process on the NCPUS CPUs of CPUS only. */
static int run_on(const int *cpus, int ncpus)
{
	cpu_set_t set;
	int i;

	CPU_ZERO(&set);
	for (i = 0; i < ncpus; i++)
		CPU_SET(cpus[i], &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		fprintf(stderr, "filehog: cannot run on the cpus given: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

/* One fs_mark process: its files of one iteration. */
static int fsmark_thread(const char *dir, int t, const int *cpus, int ncpus, long dirs, long subdirs,
			 long per_subdir, long files, long iteration, long file_bytes, long write_bytes)
{
	static char buf[1 << 20];
	char path[4096];
	long k, sub, in_sub = 0;

	if (run_on(cpus, ncpus))
		return 1;
	memset(buf, 'm', sizeof(buf));
	sub = (long)(time(NULL) % subdirs);
	for (k = 0; k < files; k++) {
		long done = iteration * files + k;	/* files this process made before */
		long left;
		int fd;

		if (in_sub >= per_subdir) {
			sub = (sub + 1) % subdirs;
			in_sub = 0;
		}
		in_sub++;

		snprintf(path, sizeof(path), "%s/d%ld/s%ld/t%d-f%ld", dir, t % dirs, sub, t, done);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0) {
			fprintf(stderr, "filehog: cannot create %s: %s\n", path, strerror(errno));
			return 1;
		}
		for (left = file_bytes; left > 0;) {
			long n = left < write_bytes ? left : write_bytes;

			if (write_all(fd, buf, n, path))
				return 1;
			left -= n;
		}
		if (close(fd) != 0) {
			fprintf(stderr, "filehog: cannot close %s: %s\n", path, strerror(errno));
			return 1;
		}
	}
	return 0;
}

static int fsmark(int argc, char **argv)
{
	static int cpus[MAX_PROCS];
	static pid_t pids[MAX_PROCS];
	long threads, dirs, subdirs, per_subdir, files, iterations, file_bytes, write_bytes, it, d, sd;
	char path[4096];
	struct timespec t0, t1;
	int ncpus, t, failed = 0;

	if (argc != 12 && argc != 13) {
		fprintf(stderr, "usage: filehog fsmark DIR THREADS CPULIST DIRS SUBDIRS PER_SUBDIR FILES ITERATIONS "
			"FILE_BYTES WRITE_BYTES [COMMAND]\n");
		return 2;
	}
	threads = parse_count(argv[3], MAX_PROCS);
	ncpus = parse_cpus(argv[4], cpus, MAX_PROCS);
	dirs = parse_count(argv[5], 1 << 20);
	subdirs = parse_count(argv[6], 1 << 20);
	per_subdir = parse_count(argv[7], 1L << 40);
	files = parse_count(argv[8], 1L << 40);
	iterations = parse_count(argv[9], 1L << 40);
	file_bytes = parse_count(argv[10], 1L << 50);
	write_bytes = parse_count(argv[11], 1L << 20);
	if (threads < 1 || ncpus < 1 || dirs < 1 || subdirs < 1 || per_subdir < 1 || files < 0 || iterations < 1 ||
	    file_bytes < 0 || write_bytes < 1) {
		fprintf(stderr, "filehog: fsmark: a count is out of range or not a number\n");
		return 2;
	}
	for (d = 0; d < dirs; d++) {
		snprintf(path, sizeof(path), "%s/d%ld", argv[2], d);
		if (mkdir(path, 0755) != 0 && errno != EEXIST) {
			fprintf(stderr, "filehog: cannot make %s: %s\n", path, strerror(errno));
			return 1;
		}
		for (sd = 0; sd < subdirs; sd++) {
			snprintf(path, sizeof(path), "%s/d%ld/s%ld", argv[2], d, sd);
			if (mkdir(path, 0755) != 0 && errno != EEXIST) {
				fprintf(stderr, "filehog: cannot make %s: %s\n", path, strerror(errno));
				return 1;
			}
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (it = 0; it < iterations && !failed; it++) {
		int started = (int)threads;

		for (t = 0; t < threads; t++) {
			pids[t] = fork();
			if (pids[t] < 0) {
				fprintf(stderr, "filehog: cannot fork process %d: %s\n", t, strerror(errno));
				failed = 1;
				started = t;
				break;
			}
			if (pids[t] == 0)
				_exit(fsmark_thread(argv[2], t, cpus, ncpus, dirs, subdirs, per_subdir, files, it,
						    file_bytes, write_bytes));
		}
		for (t = 0; t < started; t++)
			failed |= reap("fsmark", t, pids[t]);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (failed)
		return 1;
	printf("filehog: fsmark wrote %ld files of %ld bytes with %ld processes in %ld iterations in %.3f s\n",
	       threads * files * iterations, file_bytes, threads, iterations,
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	fflush(stdout);
	if (argc == 13 && run_command("filehog", argv[12]) != 0)
		return 1;
	return 0;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* filehog largedd DIR TAR_BYTES COPIES DD_BYTES DOWNLOAD_MIB_S CPULIST [COMMAND] */
static int largedd(int argc, char **argv)
{
	static char buf[1 << 20];
	static int cpus[MAX_PROCS];
	char src[4096], dst[4096];
	struct timespec t0, phase;
	double secs[3];
	long tar_bytes, copies, dd_bytes, rate, done, c;
	int fd, ncpus;

	if (argc != 8 && argc != 9) {
		fprintf(stderr, "usage: filehog largedd DIR TAR_BYTES COPIES DD_BYTES DOWNLOAD_MIB_S CPULIST [COMMAND]\n");
		return 2;
	}
	tar_bytes = parse_count(argv[3], 1L << 50);
	copies = parse_count(argv[4], 1L << 20);
	dd_bytes = parse_count(argv[5], (long)sizeof(buf));
	rate = parse_count(argv[6], 1L << 20);
	ncpus = parse_cpus(argv[7], cpus, MAX_PROCS);
	if (tar_bytes < 1 || copies < 1 || dd_bytes < 1 || rate < 1 || ncpus < 1) {
		fprintf(stderr, "filehog: largedd: a count is out of range or not a number\n");
		return 2;
	}
	if (run_on(cpus, ncpus))
		return 1;
	memset(buf, 'm', sizeof(buf));
	/* Download: 64 KiB a time; the next piece arrives n / rate after this one began (as the twin's). */
	snprintf(src, sizeof(src), "%s/tarfile", argv[2]);
	fd = open(src, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "filehog: cannot create %s: %s\n", src, strerror(errno));
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (done = 0; done < tar_bytes;) {
		long n = tar_bytes - done < 65536 ? tar_bytes - done : 65536;
		double began = seconds_since(&t0);
		double wait;

		if (write_all(fd, buf, n, src))
			return 1;
		done += n;
		wait = began + (double)n / ((double)rate * 1048576.0) - seconds_since(&t0);
		if (done < tar_bytes && wait > 0) {
			struct timespec nap = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };
			nanosleep(&nap, NULL);
		}
	}
	if (close(fd) != 0) {
		fprintf(stderr, "filehog: cannot close %s: %s\n", src, strerror(errno));
		return 1;
	}
	secs[0] = seconds_since(&t0);
	/* dd: read and write DD_BYTES a call, a fresh open of the source for each copy. */
	clock_gettime(CLOCK_MONOTONIC, &phase);
	for (c = 0; c < copies; c++) {
		int in, out;

		snprintf(dst, sizeof(dst), "%s/copy-%ld", argv[2], c);
		in = open(src, O_RDONLY);
		if (in < 0) {
			fprintf(stderr, "filehog: cannot open %s: %s\n", src, strerror(errno));
			return 1;
		}
		out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (out < 0) {
			fprintf(stderr, "filehog: cannot create %s: %s\n", dst, strerror(errno));
			return 1;
		}
		for (;;) {
			ssize_t r = read(in, buf, (size_t)dd_bytes);

			if (r < 0) {
				fprintf(stderr, "filehog: cannot read %s: %s\n", src, strerror(errno));
				return 1;
			}
			if (r == 0)
				break;
			if (write_all(out, buf, r, dst))
				return 1;
		}
		close(in);
		if (close(out) != 0) {
			fprintf(stderr, "filehog: cannot close %s: %s\n", dst, strerror(errno));
			return 1;
		}
	}
	secs[1] = seconds_since(&phase);
	printf("filehog: largedd copied %ld bytes %ld times with %ld-byte calls; download %.3f s, dd %.3f s\n",
	       tar_bytes, copies, dd_bytes, secs[0], secs[1]);
	fflush(stdout);
	if (argc == 9 && run_command("filehog", argv[8]) != 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &phase);
	for (c = 0; c < copies; c++) {
		snprintf(dst, sizeof(dst), "%s/copy-%ld", argv[2], c);
		if (unlink(dst) != 0) {
			fprintf(stderr, "filehog: cannot remove %s: %s\n", dst, strerror(errno));
			return 1;
		}
	}
	secs[2] = seconds_since(&phase);
	printf("filehog: largedd deleted the copies in %.3f s\n", secs[2]);
	return 0;
}

/* filehog directwrite PATH BYTES BLOCK */
static int directwrite(int argc, char **argv)
{
	struct timespec t0, t1;
	unsigned long long bytes, block, done = 0, writes = 0;
	void *buf;
	int fd;

	if (argc != 5) {
		fprintf(stderr, "usage: filehog directwrite PATH BYTES BLOCK\n");
		return 2;
	}
	bytes = strtoull(argv[3], NULL, 10);
	block = strtoull(argv[4], NULL, 10);
	if (block < 512 || block > (64UL << 20) || block % 512 != 0 || bytes < block) {
		fprintf(stderr, "filehog: directwrite: BLOCK must be a multiple of 512 up to 64 MiB, and BYTES at least BLOCK\n");
		return 2;
	}
	if (posix_memalign(&buf, PAGE, block) != 0) {
		fprintf(stderr, "filehog: directwrite: no memory for a %llu-byte buffer\n", block);
		return 1;
	}
	memset(buf, 0, block);
	/* A block device must exist; only a file is created. */
	fd = open(argv[2], O_WRONLY | O_DIRECT | (strncmp(argv[2], "/dev/", 5) == 0 ? 0 : O_CREAT), 0644);
	if (fd < 0) {
		fprintf(stderr, "filehog: directwrite: cannot open %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (done + block <= bytes) {
		ssize_t n = write(fd, buf, block);
		if (n != (ssize_t)block) {
			fprintf(stderr, "filehog: directwrite: write %llu to %s: %s\n", writes, argv[2],
				n < 0 ? strerror(errno) : "short write");
			close(fd);
			return 1;
		}
		done += block;
		writes++;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	close(fd);
	printf("directwrite: %llu bytes in %llu writes in %.6f s\n", done, writes,
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "mmapstream") == 0)
		return mmapstream(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "fsmark") == 0)
		return fsmark(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "largedd") == 0)
		return largedd(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "directwrite") == 0)
		return directwrite(argc, argv);
	fprintf(stderr, "usage: filehog mmapstream DIR MIB PROCS CPULIST [COMMAND]\n"
		"       filehog fsmark DIR THREADS CPULIST DIRS SUBDIRS PER_SUBDIR FILES ITERATIONS FILE_BYTES "
		"WRITE_BYTES [COMMAND]\n"
		"       filehog largedd DIR TAR_BYTES COPIES DD_BYTES DOWNLOAD_MIB_S CPULIST [COMMAND]\n"
		"       filehog directwrite PATH BYTES BLOCK\n");
	return 2;
}
