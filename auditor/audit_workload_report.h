/* The reports' view of the workloads (audit_workloads.h): the text report's
 * lines grouped by pod and container, the JSON's "workloads", and the gate
 * applied to each (--per-workload).
 *
 * Errors: nothing here can fail (the auditor reports a failure as a
 * negative errno). */
#ifndef SHMGUARD_AUDIT_WORKLOAD_REPORT_H
#define SHMGUARD_AUDIT_WORKLOAD_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "audit_engine.h"

/* The text report's workload lines. */
void audit_workloads_print(const struct audit *a, FILE *out);
/* The JSON's "workloads" array. */
json_t *audit_workloads_json(const struct audit *a);
/* Why the gate fails for the workloads, in reason: one whose leak cannot
 * be known (aborts of its root that none of its files could be tied to),
 * with or without a budget; with --per-workload, the first one over
 * budget, or none judged at all.  False if it does not. */
bool audit_workloads_gate(const struct audit *a, char *reason, size_t len);

#endif
