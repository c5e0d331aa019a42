/* The audit's result in the forms CI systems read natively: a JUnit XML
 * file (--junit) whose test cases are the leak's shapes, and under GitHub
 * Actions (GITHUB_ACTIONS=true) workflow-command annotations on stdout and
 * a Markdown table appended to the job's summary ($GITHUB_STEP_SUMMARY). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit_ci.h"
#include "outfile.h"
#include "text.h"
#include "encode.h"
#include "size.h"

/* A failing case lists this many requests, then how many more there are. */
#define LISTED_REQUESTS 50

/* A case's name: the creating command and the shape, the same in every
 * run, whether its files were attributed by a tag or by a pattern
 * (audit_file_shape): what changes (pids, counts) goes into properties. */
static void case_start(FILE *out, const struct audit *a, int comm_len, const char *comm, int shape)
{
	char name[sizeof(a->abort_set.commands.seen[0].comm) + SG_NAME_MAX + 2];

	snprintf(name, sizeof(name), "%.*s %s", comm_len, comm, audit_shape_text(a, shape));
	fputs("    <testcase classname=\"shmguard.audit.leak\" name=\"", out);
	sg_xml_text(out, name);
	fputs("\" time=\"0\">\n      <properties>\n", out);
}

/* One case per group of leftovers (a creating process and a name shape).
 * It fails unless the gate passed with a budget, which allows the leak;
 * either way it lists the aborted requests that left files of the group. */
static void leak_case(FILE *out, const struct audit *a, const struct summary *s, const struct group *g)
{
	char bytes[32];
	unsigned listed = 0, more = 0;
	bool failed = !(a->o->gate.have_budget && !s->over_budget);

	case_start(out, a, (int)strcspn(g->key, "\t"), g->key, g->shape);
	sg_human_bytes(g->bytes, bytes, sizeof(bytes));
	fputs("        <property name=\"pids\" value=\"", out);
	for (unsigned i = 0; i < g->npids && i < GROUP_PIDS; i++)
		fprintf(out, "%s%u", i ? " " : "", g->pids[i]);
	if (g->npids > GROUP_PIDS)
		fprintf(out, " and %u more", g->npids - GROUP_PIDS);
	fprintf(out, "\"/>\n        <property name=\"files\" value=\"%llu\"/>\n"
		     "        <property name=\"segments\" value=\"%llu\"/>\n"
		     "        <property name=\"bytes\" value=\"%llu\"/>\n      </properties>\n",
		(unsigned long long)g->files, (unsigned long long)g->segments, (unsigned long long)g->bytes);
	if (failed)
		fprintf(out, "      <failure type=\"leak\" message=\"aborted requests left %llu files, %s\">",
			(unsigned long long)g->files, bytes);
	else
		fputs("      <system-out>", out);
	for (const struct audit_abort *ab = a->abort_set.aborts; ab; ab = ab->next) {
		uint64_t files = 0, sum = 0;

		for (const struct audit_leftover *l = ab->leftovers; l; l = l->next)
			if (audit_group_has(g, l)) {
				files++;
				sum += l->bytes;
			}
		if (!files)
			continue;
		if (listed++ >= LISTED_REQUESTS) {
			more++;
			continue;
		}
		sg_human_bytes(sum, bytes, sizeof(bytes));
		sg_xml_text(out, ab->request);
		fprintf(out, ": %llu files, %s, marker at %.1f s\n", (unsigned long long)files, bytes, ab->marker_s);
	}
	more += (unsigned)g->requests_folded; /* no longer listed (audit_fold.c) */
	if (more)
		fprintf(out, "... and %u more aborted requests\n", more);
	fputs(failed ? "</failure>\n" : "</system-out>\n", out);
	fputs("    </testcase>\n", out);
}

/* A command and shape whose aborted requests left no file: the same case
 * as when they leak, passing, so that CI history shows a leak fixed. */
static void clean_case(FILE *out, const struct audit *a, const char *comm, int shape)
{
	case_start(out, a, (int)strlen(comm), comm, shape);
	fputs("        <property name=\"files\" value=\"0\"/>\n"
	      "        <property name=\"segments\" value=\"0\"/>\n"
	      "        <property name=\"bytes\" value=\"0\"/>\n      </properties>\n"
	      "      <system-out>no aborted request left a file of this shape</system-out>\n    </testcase>\n",
	      out);
}

/* Whether command comm's files of that shape leaked (a group of by_proc). */
static bool leaked(const struct groups *by_proc, const char *comm, int shape)
{
	for (size_t i = 0; i < by_proc->n; i++)
		if (audit_group_is(&by_proc->g[i], comm, shape))
			return true;
	return false;
}

/* The passing cases: each command's shapes that did not leak; written to
 * out unless it is NULL; how many. */
static unsigned clean_cases(FILE *out, const struct audit *a, const struct audit_commands *c, const struct groups *by_proc)
{
	unsigned n = 0;

	for (unsigned i = 0; i < c->n; i++)
		for (int shape = c->seen[i].tag_shape ? -1 : 0; shape < (int)a->o->patterns.count; shape++) {
			if (leaked(by_proc, c->seen[i].comm, shape))
				continue;
			if (out)
				clean_case(out, a, c->seen[i].comm, shape);
			n++;
		}
	return n;
}

int audit_junit_write(const struct audit *a, const struct summary *s, const struct groups *by_proc)
{
	struct audit_commands commands = a->abort_set.commands;
	unsigned tests = 0, failures = 0, clean;
	FILE *out = NULL;
	int fd = -1, ret;

	/* A new, empty file made before the run (or stdout). */
	if ((fd = dup(a->run.junit_fd)) < 0 || !(out = fdopen(fd, "w"))) {
		ret = -errno;
		goto cleanup;
	}
	fd = -1;
	/* The commands of the files that went (audit_markers.h), and of those
	 * still followed. */
	for (struct audit_file *f = audit_files_newest(a->files); f; f = audit_files_older(a->files, f))
		audit_commands_note(&commands, &a->attribution, f);
	clean = clean_cases(NULL, a, &commands, by_proc);
	tests = by_proc->n + clean ? (unsigned)by_proc->n + clean : 1;
	if (by_proc->n && !(a->o->gate.have_budget && !s->over_budget))
		failures = (unsigned)by_proc->n;
	tests += s->drops_fail + a->o->gate.have_budget;
	failures += s->drops_fail + s->too_few_aborts;
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		     "<testsuites name=\"shmguard audit\" tests=\"%u\" failures=\"%u\" errors=\"0\" time=\"%.3f\">\n"
		     "  <testsuite name=\"shmguard audit\" tests=\"%u\" failures=\"%u\" errors=\"0\" skipped=\"0\" "
		     "time=\"%.3f\">\n",
		tests, failures, a->end_s, tests, failures, a->end_s);
	if (commands.more)
		fprintf(out, "    <properties>\n      <property name=\"commands_not_listed\" value=\"more than %u commands "
			     "made files: the shapes of the first %u are cases, and every one that leaked\"/>\n"
			     "    </properties>\n",
			AUDIT_COMMANDS_MAX, AUDIT_COMMANDS_MAX);
	if (!by_proc->n && !clean)
		fprintf(out, "    <testcase classname=\"shmguard.audit.leak\" name=\"no aborted request leaked\" "
			     "time=\"%.3f\"/>\n",
			a->end_s);
	for (size_t i = 0; i < by_proc->n; i++)
		leak_case(out, a, s, &by_proc->g[i]);
	clean_cases(out, a, &commands, by_proc);
	/* With a budget: whether enough aborts were measured to judge it. */
	if (a->o->gate.have_budget) {
		fputs("    <testcase classname=\"shmguard.audit\" name=\"aborts measured\" time=\"0\">\n", out);
		if (s->too_few_aborts) {
			fputs("      <failure type=\"too-few-aborts\" message=\"", out);
			sg_xml_text(out, s->reason);
			fputs("\"/>\n", out);
		}
		fprintf(out, "      <system-out>%u aborts measured, at least %u needed (--min-aborts)</system-out>\n",
			audit_aborts_counted(a), a->o->gate.min_aborts);
		fputs("    </testcase>\n", out);
	}
	if (s->drops_fail)
		fprintf(out, "    <testcase classname=\"shmguard.audit\" name=\"nothing lost\" time=\"0\">\n"
			     "      <failure type=\"lost\" message=\"%llu events dropped, %llu files over --max-files, "
			     "%llu marker queue overflows: the figures are lower bounds\"/>\n"
			     "    </testcase>\n",
			(unsigned long long)a->run.dropped, (unsigned long long)audit_files_over_limit(a->files),
			(unsigned long long)a->abort_set.marker_overflows);
	fputs("  </testsuite>\n</testsuites>\n", out);
	ret = 0;
cleanup:
	if (out && fclose(out) != 0)
		ret = -EIO;
	if (fd >= 0)
		close(fd);
	if (ret < 0)
		fprintf(stderr, "shmguard audit: cannot write %s\n", a->o->reports.junit_path);
	return ret;
}

/* A workflow command's message: '%', CR and LF are escaped.  On stderr
 * when a report took stdout (the runner reads both). */
static void annotation(const struct audit *a, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void annotation(const struct audit *a, const char *kind, const char *fmt, ...)
{
	FILE *out = a->run.report_on_stdout ? stderr : stdout;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(out, "::%s::", kind);
	for (const char *c = msg; *c; c++) {
		if (*c == '%')
			fputs("%25", out);
		else if (*c == '\r')
			fputs("%0D", out);
		else if (*c == '\n')
			fputs("%0A", out);
		else
			fputc(*c, out);
	}
	fputc('\n', out);
	fflush(out);
}

/* A table cell holding text as code (a pattern's '_' and '*' are no
 * emphasis): '|' would end the cell, a backquote the code. */
static void code_cell(FILE *out, const char *text)
{
	char buf[SG_ESCAPED_MAX];

	fputs(" `", out);
	for (const char *c = sg_text_escape(text, buf, sizeof(buf)); *c; c++) {
		if (*c == '|')
			fputs("\\|", out);
		else
			fputc(*c == '`' ? '\'' : *c, out);
	}
	fputs("` |", out);
}

static void summary_table(FILE *out, const struct audit *a, const struct summary *s, const struct groups *by_shape)
{
	char leaked[32], live[32];

	sg_human_bytes(s->leaked_bytes, leaked, sizeof(leaked));
	sg_human_bytes(s->live_pending, live, sizeof(live));
	fprintf(out, "### shmguard audit: %s\n\n", strcmp(s->verdict, "fail") == 0   ? "FAIL"
						   : strcmp(s->verdict, "pass") == 0 ? "PASS"
										     : "no budget");
	fputs("| aborts | leaked | per abort | budget | leak growth | live requests pending | events lost | run |\n"
	      "|---:|---:|---:|---:|---:|---:|---:|---:|\n",
	      out);
	fprintf(out, "| %u | %s in %llu files | %.1f KiB |", audit_aborts_counted(a), leaked, (unsigned long long)s->leaked_files,
		s->kib_per_abort);
	if (a->o->gate.have_budget)
		fprintf(out, " %g KiB |", a->o->gate.budget_kib);
	else
		fputs(" none |", out);
	if (s->leak_growth_mib_per_hour >= 0)
		fprintf(out, " %.1f MiB/h |", s->leak_growth_mib_per_hour);
	else
		fprintf(out, " run too short (< %.0f s) |", AUDIT_GROWTH_MIN_S);
	fprintf(out, " %s in %llu files | %llu | %.1f s |\n\n", live, (unsigned long long)s->live_files,
		(unsigned long long)a->run.dropped, a->end_s);
	if (!by_shape->n)
		return;
	fputs("| leak shape | files | bytes |\n|---|---:|---:|\n", out);
	for (size_t i = 0; i < by_shape->n && i < 10; i++) {
		fputs("|", out);
		code_cell(out, by_shape->g[i].key);
		sg_human_bytes(by_shape->g[i].bytes, leaked, sizeof(leaked));
		fprintf(out, " %llu | %s |\n", (unsigned long long)by_shape->g[i].files, leaked);
	}
	fputs("\n", out);
}

void audit_github_report(const struct audit *a, const struct summary *s, const struct groups *by_shape)
{
	const char *env = getenv("GITHUB_ACTIONS"), *path = getenv("GITHUB_STEP_SUMMARY");
	char leaked[32], err[SG_OUTFILE_ERR_MAX], shown[SG_ESCAPED_MAX];
	FILE *out;
	int fd;

	if (!env || strcmp(env, "true") != 0)
		return;
	sg_human_bytes(s->leaked_bytes, leaked, sizeof(leaked));
	if (s->over_budget)
		annotation(a, "error", "shmguard audit: aborted requests leak %.1f KiB/abort, over the budget of %g KiB/abort "
				    "(%u aborts left %s in %llu files)",
			   s->kib_per_abort, a->o->gate.budget_kib, audit_aborts_counted(a), leaked, (unsigned long long)s->leaked_files);
	if (s->lost)
		annotation(a, s->drops_fail ? "error" : "warning",
			   "shmguard audit: %llu events dropped, %llu files over --max-files, %llu marker queue "
			   "overflows: the figures are lower bounds%s",
			   (unsigned long long)a->run.dropped, (unsigned long long)audit_files_over_limit(a->files),
			   (unsigned long long)a->abort_set.marker_overflows, s->drops_fail ? "" : " (--allow-drops)");
	if (s->too_few_aborts)
		annotation(a, "error", "shmguard audit: FAIL, %s", s->reason);
	if (!s->reason[0])
		annotation(a, "notice", "shmguard audit: %s, %.1f KiB/abort over %u aborts (%s in %llu files)",
			   strcmp(s->verdict, "pass") == 0 ? "PASS" : "no budget", s->kib_per_abort, audit_aborts_counted(a), leaked,
			   (unsigned long long)s->leaked_files);
	if (!path || !*path)
		return;
	/* Appended: other steps of the job write to it too, and it stays the
	 * runner's file (host/outfile.h checks what it is). */
	fd = sg_outfile_append(path, err, sizeof(err));
	if (fd < 0 || !(out = fdopen(fd, "a"))) {
		fprintf(stderr, "shmguard audit: cannot append to $GITHUB_STEP_SUMMARY (%s): %s\n",
			sg_text_escape(path, shown, sizeof(shown)), fd < 0 ? err : strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	summary_table(out, a, s, by_shape);
	if (fclose(out) != 0)
		fprintf(stderr, "shmguard audit: cannot write $GITHUB_STEP_SUMMARY (%s)\n",
			sg_text_escape(path, shown, sizeof(shown)));
}
