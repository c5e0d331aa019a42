/* The auditor's file table alone: the bytes malloc holds for each followed
 * file (its record, name, request, creator and the buckets), without the
 * rest of the run (the event ring buffer, the review).  docs/performance.md
 * has the figures; scripts/bench-audit.sh prints them.
 *   bench_audit_files N [REQUESTS]
 *       N files named as `bench_shim keep`'s, of one creator, in REQUESTS
 *       requests (0: none), each named after it is added, as the review
 *       names the files the ctime probe sees made (it sends no name)
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_files.h"

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 0, nreq = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
	struct mallinfo2 before = mallinfo2(), after;
	struct audit_files *t = audit_files_new(n);
	char name[64], request[32];

	if (argc < 2 || argc > 3 || !n || !t) {
		fprintf(stderr, "usage: bench_audit_files N [REQUESTS]\n");
		return 2;
	}
	for (size_t i = 0; i < n; i++) {
		struct audit_file *f = audit_files_add(t, 1, 1000 + i, 4242, "bench_shim", NULL);

		snprintf(name, sizeof(name), "sgm-k-%zu_0_0", i);
		if (!f || !audit_files_name(t, f, 0, name)) {
			fprintf(stderr, "bench_audit_files: out of memory at %zu files\n", i);
			return 1;
		}
		if (nreq) {
			snprintf(request, sizeof(request), "sgm-k-%zu", i % nreq);
			audit_files_attribute(t, f, request, REQ_TAG, -1);
		}
	}
	after = mallinfo2();
	printf("table %zu files, %zu requests: %.0f bytes per file\n", n, nreq,
	       ((double)(after.uordblks + after.hblkhd) - (double)(before.uordblks + before.hblkhd)) / (double)n);
	audit_files_free(t);
	return 0;
}
