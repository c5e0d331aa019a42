/* The auditor's figures for Prometheus: the text exposition format, written
 * to a node_exporter textfile-collector file or served on /metrics.
 *
 * Errors: a negative errno, and a sentence in err where a function takes
 * one; the front door (audit.h) turns them into an exit status. */
#ifndef SHMGUARD_METRICS_H
#define SHMGUARD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct metrics_root {
	const char *path;
	uint64_t tracked_bytes;      /* files created during the run that still exist */
	uint64_t unattributed_bytes; /* the part of it that belongs to no request */
	uint64_t free_bytes;         /* statvfs: what the filesystem can still take */
	uint64_t size_bytes;         /* statvfs: the filesystem's size */
	/* The pod whose /dev/shm it is, labelled as the workloads' series;
	 * "" (or NULL) where not known. */
	const char *namespace_, *pod, *container;
};

/* A workload's series (audit_workloads.h): labelled as cAdvisor and
 * kube-state-metrics label containers, "" where not known. */
struct metrics_workload {
	const char *namespace_, *pod, *container, *container_id, *cgroup;
	uint64_t cgroup_id;
	uint64_t aborts_measured, leaked_bytes; /* counters while the workload is known */
	uint64_t aborts_unattributed; /* measured aborts of its root none of its files was tied to */
	uint64_t aborted_held_bytes, tracked_bytes;
};

/* One snapshot.  Counters (_total) only grow during a run. */
struct audit_metrics {
	uint64_t aborts;          /* abort markers seen */
	uint64_t aborted_held_bytes; /* bytes held by aborted requests now */
	uint64_t reclaimed_bytes; /* bytes of aborted requests gone after their marker */
	uint64_t live_pending_bytes; /* bytes of requests not aborted, still there */
	uint64_t aborts_measured; /* aborts whose grace is over and were measured */
	uint64_t leaked_bytes;    /* what those left: rate(leaked) / rate(measured) is bytes per abort */
	double last_review_unix_s; /* when the last review cycle ended (the run's start before the first) */
	double last_review_duration_s; /* how long it took (0 before the first) */
	uint64_t events, dropped_events, files_over_limit, lost_markers;
	uint64_t followed_files; /* records in the file table now */
	uint64_t freed_at_eviction, freed_by_review; /* records forgotten, by how their file's end was seen */
	struct {
		bool on;              /* --reclaim-dead runs: the figures below are shown */
		uint64_t bytes, files; /* dead creators' files it removed */
		const char *scope;    /* which /dev/shm it covers (audit_reclaim_scope_name) */
		uint64_t roots, node_roots_left; /* in its last pass */
	} dead_reclaimed;
	uint64_t unfollowed_files; /* files of aborted requests on filesystems not followed */
	const char *probe;        /* how the kernel side sees creations */
	const char *version;
	struct metrics_root *roots; /* the caller's */
	unsigned nroots;
	const struct metrics_workload *workloads;
	size_t nworkloads;
	struct {
		uint64_t without_workload; /* measured aborts that counted for no workload */
		uint64_t records;    /* aborts whose records the auditor holds (bounded: docs/audit.md) */
		uint64_t remembered; /* folded aborts still known by request (their marker or files remain) */
	} abort_book;
	uint64_t workloads_folded; /* live workloads past the series' limit, in the series id="other" */
};

/* The snapshot in the text exposition format (version 0.0.4), in a malloc'd
 * string; NULL when out of memory. */
char *metrics_render(const struct audit_metrics *m, size_t *len);

/* Replaces path with text atomically (host/outfile.h: a new file in the
 * same directory, then rename(2)), so a collector never reads half a file.
 * 0, or a negative errno with a reason in err. */
int metrics_write_file(const char *path, const char *text, size_t len, char *err, size_t errlen);

/* An HTTP server answering GET /metrics with the last published text, on
 * its own thread (libmicrohttpd), so slow or bad clients never stall the
 * caller.  addr is "HOST:PORT" ("127.0.0.1:9464", "[::1]:9464",
 * "localhost:9464": a name is resolved and its first address used; ":9464"
 * for every IPv4 address).  NULL with a reason in err when it cannot listen. */
struct metrics_server;
struct metrics_server *metrics_serve(const char *addr, char *err, size_t errlen);
/* The port it listens on (useful with port 0). */
unsigned metrics_port(const struct metrics_server *s);
/* The address it listens on, as "HOST:PORT" ("[V6]:PORT"), the real port
 * for port 0: for people to see. */
const char *metrics_address(const struct metrics_server *s);
/* Takes a copy of text as what /metrics answers from now on. */
void metrics_publish(struct metrics_server *s, const char *text, size_t len);
void metrics_stop(struct metrics_server *s);

#endif
