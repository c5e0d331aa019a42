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
/* With --per-workload: why the gate fails for the workloads (the first one
 * over budget, or none judged at all), in reason; false if it does not. */
bool audit_workloads_gate(const struct audit *a, char *reason, size_t len);

#endif
