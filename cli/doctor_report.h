/* shmguard doctor's report, which every check writes into: a line each,
 * on stdout, or with --json objects gathered for the JSON report.  The
 * checks and the command depend on it; it depends on neither. */
#ifndef SHMGUARD_DOCTOR_REPORT_H
#define SHMGUARD_DOCTOR_REPORT_H

#include <jansson.h>
#include <stdbool.h>

/* One line of the report: "what ok|FAIL message"; returns 0 if ok, else 1.
 * A line with what "" details the check above it.  With --json, the line
 * goes into the check's object instead (name, verdict, reason). */
__attribute__((format(printf, 3, 4))) int doctor_line(const char *what, bool ok, const char *fmt, ...);
/* A line that explains the check above it, with no verdict of its own
 * (its "notes" in JSON). */
__attribute__((format(printf, 1, 2))) void doctor_note(const char *fmt, ...);

/* From now on, lines are gathered as JSON (the checks array): 0, or -1
 * out of memory. */
int doctor_report_to_json(void);
/* The checks gathered so far (borrowed), or NULL without --json. */
json_t *doctor_report_checks(void);
/* Lets the gathered checks go. */
void doctor_report_end(void);

#endif
