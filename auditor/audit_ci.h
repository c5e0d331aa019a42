/* The CI writers (audit_ci.c): --junit and, under GitHub Actions,
 * annotations on stdout and a summary table in $GITHUB_STEP_SUMMARY.
 *
 * Errors: a negative errno, and a sentence in err where a function takes
 * one; the front door (audit.h) turns them into an exit status. */
#ifndef SHMGUARD_AUDIT_CI_H
#define SHMGUARD_AUDIT_CI_H

#include "audit_summary.h"

/* audit_ci.c: --junit (0, or a negative errno when it cannot be written) and, under
 * GitHub Actions, annotations on stdout and a summary table appended to
 * $GITHUB_STEP_SUMMARY. */
int audit_junit_write(const struct audit *a, const struct summary *s, const struct groups *by_proc);
void audit_github_report(const struct audit *a, const struct summary *s, const struct groups *by_shape);

#endif
