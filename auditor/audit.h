/* shmguard audit's engine, from outside: options in, an opaque run, its
 * report out.  cmd_audit.c parses the options into struct audit_opts and
 * prints; everything else (the tracer, the tables, the review, the loop,
 * the reports) lives behind these four calls (auditor/audit_engine.h has
 * the parts' own view). */
#ifndef SHMGUARD_AUDIT_H
#define SHMGUARD_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"
#include "pattern.h"

/* Exit codes of shmguard audit. */
enum {
	AUDIT_PASS = 0,
	AUDIT_OVER_BUDGET = 1, /* or events, files or markers lost without --allow-drops */
	AUDIT_USAGE = 2,
	AUDIT_NO_TRACING = 3,
	AUDIT_CMD_FAILED = 4, /* the gate passed, but COMMAND did not succeed (or was killed) */
};

/* The report files and the live metrics (audit.c, audit_live.c). */
struct audit_report_opts {
	const char *json_path, *junit_path, *plot_path; /* opened by audit_new(); "-": stdout */
	const char *metrics_path; /* --metrics-file: rewritten every metrics_interval */
	double metrics_interval;
	const char *listen_addr; /* --listen ADDR:PORT, served from audit_new() on */
};

/* The gate (audit_report.c, audit_ci.c). */
struct audit_gate_opts {
	bool have_budget, allow_drops;
	double budget_kib;
	unsigned min_aborts; /* the gate fails with fewer aborts measured (--min-aborts) */
	unsigned abort_detail; /* measured aborts listed in the report, of each kind (--abort-detail; 0: the default) */
	bool per_workload; /* the gate applies to each workload too (--per-workload) */
};

/* The workloads' names (audit_workloads.h). */
struct audit_workload_opts {
	const char *pod_logs; /* the kubelet's pod log directories, for pods' names (--pod-logs) */
	const char *container_logs; /* its container log links, for containers' names (--container-logs) */
	double expiry; /* a workload nothing refers to is forgotten this long after (--workload-expiry) */
	size_t series_max; /* workloads with series of their own (--max-workload-series), 0: no limit */
};

/* The kernel side (audit_trace.h). */
struct audit_tracing_opts {
	const char *shim; /* the shim whose USDT tags to follow, or NULL: none found */
	const char *probe; /* forced (--probe), or NULL: the best one here */
	unsigned ring_kib; /* the kernel side's event buffer, a power of two */
	bool verbose; /* libbpf's messages */
};

/* --reclaim-dead (audit_reclaim.h). */
struct audit_dead_opts {
	double interval; /* in seconds, 0: none */
	bool ignore_unreadable, dry_run;
	bool node_shm; /* the node's own /dev/shm too (--reclaim-node-shm) */
	bool record_creators; /* the run records creators for reclaim (--record-creators, audit_recorder.h) */
};

struct audit_opts {
	struct sg_pattern_set patterns;
	char abort_dir[SG_PATH_MAX + 1];
	struct sg_roots roots;
	double grace, duration, interval;
	struct audit_report_opts reports;
	struct audit_gate_opts gate;
	struct audit_workload_opts workloads;
	struct audit_tracing_opts trace;
	struct audit_dead_opts reclaim;
	const char *version; /* shmguard's, for the metrics */
	uid_t shim_uid; /* whose trust rule the abort directories and markers are checked by (--shim-uid) */
	size_t max_files;
	char **cmd; /* NULL: the whole system */
	/* Node mode: every tmpfs at /dev/shm of every mount namespace is a root
	 * too, found and forgotten during the run (the default without COMMAND). */
	bool node_mode;
	char root_abort_name[SG_NAME_MAX + 1]; /* a discovered root's abort directory, in it */
	/* --root-abort-dir given: every pod's, whatever SHMGUARD_ABORT_DIR its
	 * environment names (else that one, in its /dev/shm, is followed). */
	bool root_abort_given;
};

struct audit;

/* Checks what the run needs before it starts (the roots and the abort
 * directory exist, the report files can be written, --listen serves) and
 * blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD for the run.  NULL with err
 * saying why: bad usage or input (AUDIT_USAGE).  o must outlive the run. */
struct audit *audit_new(const struct audit_opts *o, char *err, size_t errlen);

/* The run: tracing starts, then COMMAND (held until it is traced), and
 * the run goes on until COMMAND ends, --duration is over, or a signal (a
 * first SIGINT, SIGTERM or SIGHUP goes to COMMAND; a second kills it).
 * Returns 0 when it ran (audit_report() then says how it went); -1 when
 * it broke after it began (err says why: what was measured can still be
 * reported, and the exit status is AUDIT_NO_TRACING); else the exit
 * status, with err: AUDIT_NO_TRACING (tracing is not possible here, err
 * names what is missing) or AUDIT_USAGE (COMMAND cannot start). */
int audit_run(struct audit *a, char *err, size_t errlen);

/* The report (stdout, or stderr when a report file is stdout; --json,
 * --junit, --plot, GitHub Actions), each report file then replacing its
 * path: the exit status it makes, AUDIT_PASS, AUDIT_OVER_BUDGET or
 * AUDIT_CMD_FAILED, or AUDIT_USAGE when a report file cannot be written. */
int audit_report(struct audit *a);

/* Ends COMMAND if it still runs, and frees everything; report files the
 * run created but never wrote are removed.  NULL is fine. */
void audit_free(struct audit *a);

#endif
