/* allreduce_ns.c - times N back-to-back MPI_Allreduce calls: the per-call cost that probes add to */
/*
 *   mpirun --allow-run-as-root -np 1 build/bench/allreduce_ns --go-file F [--calls N] [--count K]
 *
 * Prints "ready rank=R pid=P" once warmed up, waits for the go-file (the tracer attaches in
 * between), then "done rank=R pid=P calls=N total_ns=T mean_ns=M median_ns=D": mean is total
 * loop time / N, median is the median of single calls, each bracketed by two vDSO clock reads
 * (a constant ~50 ns that cancels out when conditions are subtracted).
 */
#include <errno.h>
#include <getopt.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NSEC_PER_SEC	1000000000LL
#define GO_TIMEOUT_NS	(120 * NSEC_PER_SEC)
#define WARMUP_CALLS	2000	/* faults in buffers, lazy binding and OpenMPI's first-call setup */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static long parse_long(const char *s, const char *what, long min)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min) {
		fprintf(stderr, "allreduce_ns: bad value for %s: '%s' (need an integer >= %ld)\n",
			what, s, min);
		return -1;
	}
	return v;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Returns 0 once the go-file exists, -ETIMEDOUT after GO_TIMEOUT_NS. */
static int wait_go(const char *path)
{
	int64_t deadline = now_ns() + GO_TIMEOUT_NS;
	struct timespec poll = { .tv_nsec = 2 * 1000 * 1000 };

	while (access(path, F_OK) != 0) {
		if (now_ns() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&poll, NULL);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "calls",	required_argument, NULL, 'n' },
		{ "count",	required_argument, NULL, 'k' },
		{ "go-file",	required_argument, NULL, 'g' },
		{ NULL, 0, NULL, 0 },
	};
	long calls = 200000, count = 1, i;
	const char *go_file = NULL;
	double *sendbuf, *recvbuf;
	int64_t *lat, t0, t1;
	int rank, c;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);

	opterr = rank == 0;
	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case 'n': calls = parse_long(optarg, "--calls", 1); break;
		case 'k': count = parse_long(optarg, "--count", 1); break;
		case 'g': go_file = optarg; break;
		default: calls = -1; break;
		}
		if (calls < 0 || count < 0)
			break;
	}
	if (calls < 0 || count < 0 || count > 1 << 24 || optind != argc || !go_file) {
		if (rank == 0)
			fprintf(stderr, "usage: %s --go-file PATH [--calls N] [--count K<=16M]\n",
				argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}

	sendbuf = calloc(count, sizeof(*sendbuf));
	recvbuf = calloc(count, sizeof(*recvbuf));
	lat = calloc(calls, sizeof(*lat));
	if (!sendbuf || !recvbuf || !lat) {
		perror("allreduce_ns: calloc");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (i = 0; i < WARMUP_CALLS; i++)
		MPI_Allreduce(sendbuf, recvbuf, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

	printf("ready rank=%d pid=%d\n", rank, (int)getpid());
	fflush(stdout);
	if (wait_go(go_file)) {
		fprintf(stderr, "allreduce_ns: rank %d: go-file %s did not appear within 120 s\n",
			rank, go_file);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}

	t0 = now_ns();
	for (i = 0; i < calls; i++) {
		int64_t a = now_ns();

		if (MPI_Allreduce(sendbuf, recvbuf, (int)count, MPI_DOUBLE, MPI_SUM,
				  MPI_COMM_WORLD) != MPI_SUCCESS) {
			fprintf(stderr, "allreduce_ns: rank %d: MPI_Allreduce failed\n", rank);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		lat[i] = now_ns() - a;
	}
	t1 = now_ns();

	qsort(lat, calls, sizeof(*lat), cmp_i64);
	printf("done rank=%d pid=%d calls=%ld total_ns=%lld mean_ns=%.1f median_ns=%lld\n",
	       rank, (int)getpid(), calls, (long long)(t1 - t0), (double)(t1 - t0) / calls,
	       (long long)lat[calls / 2]);
	fflush(stdout);

	free(lat);
	free(recvbuf);
	free(sendbuf);
	MPI_Finalize();
	return 0;
}
