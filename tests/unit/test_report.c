/* The audit's report, from a hand-made run: no BPF. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <jansson.h>
#include <sys/mman.h>
#include <unistd.h>

#include "audit_engine.h"

static struct audit_leftover *leftover(struct audit_leftover *next, const char *comm, uint32_t pid, int shape,
				       uint64_t bytes)
{
	struct audit_leftover *l = calloc(1, sizeof(*l));

	cr_assert_not_null(l);
	*l = (struct audit_leftover){.next = next, .creator = pid, .shape = shape, .bytes = bytes, .segment = bytes > 0};
	snprintf(l->comm, sizeof(l->comm), "%s", comm);
	return l;
}

static json_t *report(struct audit_abort *aborts, unsigned naborts)
{
	struct audit_opts o = {.reports.json_path = "report.json"};
	struct audit a = {.o = &o, .abort_set = {.aborts = aborts, .naborts = naborts}, .run.probe = "test",
			  .run.cmd_status = -1, .attribution.patterns = &o.patterns};
	char err[200];
	json_error_t jerr;
	json_t *root;

	cr_assert_eq(sg_patterns_parse(&o.patterns, "{req}_{int}_{int}", err, sizeof(err)), 0, "%s", err);
	cr_assert_geq(a.run.json_fd = memfd_create("report", 0), 0);
	cr_assert_not_null(a.files = audit_files_new(10));
	bool failed[AUDIT_REPORT_FILES];
	cr_assert_eq(audit_report_write(&a, failed), AUDIT_PASS);
	lseek(a.run.json_fd, 0, SEEK_SET);
	root = json_loadfd(a.run.json_fd, 0, &jerr);
	cr_assert_not_null(root, "%s", jerr.text);
	close(a.run.json_fd);
	audit_files_free(a.files);
	return root;
}

static void expect_group(json_t *g, const char *process, const char *shape, json_int_t bytes, json_int_t files)
{
	cr_assert_not_null(g);
	if (process)
		cr_expect_str_eq(json_string_value(json_object_get(g, "process")), process);
	cr_expect_str_eq(json_string_value(json_object_get(g, "shape")), shape);
	cr_expect_eq(json_integer_value(json_object_get(g, "leaked_bytes")), bytes);
	cr_expect_eq(json_integer_value(json_object_get(g, "files")), files);
}

Test(report, leftovers_grouped_by_process_and_by_shape, .init = cr_redirect_stdout)
{
	/* Two aborts: stage1 leaves pattern-named files in both, stage2 a
	 * tagged one; a command with two shapes makes two groups, and two
	 * processes of one command (pids 10, 11) one group. */
	struct audit_abort second = {.request = "r2", .leaked_bytes = 1300,
				     .leftovers = leftover(leftover(NULL, "stage1", 11, 0, 1000), "stage1", 10, -1,
							   300)};
	struct audit_abort first = {.next = &second, .request = "r1", .leaked_bytes = 2500,
				    .leftovers = leftover(leftover(NULL, "stage1", 10, 0, 500), "stage2", 20, -1,
							  2000)};
	json_t *root = report(&first, 2), *procs, *shapes;

	procs = json_object_get(root, "top_processes");
	cr_assert_eq(json_array_size(procs), 3);
	expect_group(json_array_get(procs, 0), "stage2", "(shim tag)", 2000, 1);
	expect_group(json_array_get(procs, 1), "stage1", "{req}_{int}_{int}", 1500, 2);
	expect_group(json_array_get(procs, 2), "stage1", "(shim tag)", 300, 1);
	json_t *pids = json_object_get(json_array_get(procs, 1), "pids");
	cr_expect_eq(json_array_size(pids), 2);
	cr_expect_eq(json_integer_value(json_array_get(pids, 0)) + json_integer_value(json_array_get(pids, 1)), 21);
	cr_expect_eq(json_integer_value(json_object_get(json_array_get(procs, 1), "processes")), 2);
	shapes = json_object_get(root, "top_shapes");
	cr_assert_eq(json_array_size(shapes), 2);
	expect_group(json_array_get(shapes, 0), NULL, "(shim tag)", 2300, 2);
	expect_group(json_array_get(shapes, 1), NULL, "{req}_{int}_{int}", 1500, 2);
	json_decref(root);
}

Test(report, no_leftovers_no_groups, .init = cr_redirect_stdout)
{
	struct audit_abort only = {.request = "r1"};
	json_t *root = report(&only, 1);

	cr_expect_eq(json_array_size(json_object_get(root, "top_processes")), 0);
	cr_expect_eq(json_array_size(json_object_get(root, "top_shapes")), 0);
	cr_expect_eq(json_integer_value(json_object_get(root, "aborts")), 1);
	json_decref(root);
}

/* One file is "1 file", not "1 files", in every line that counts them. */
Test(report, counts_of_one_are_singular, .init = cr_redirect_stdout)
{
	struct audit_abort only = {.request = "r1", .leaked_bytes = 4096, .leaked_files = 1, .leaked_segments = 1,
				   .leftovers = leftover(NULL, "stage1", 10, 0, 4096)};
	char text[4096] = "";

	json_decref(report(&only, 1));
	fflush(stdout);
	FILE *out = cr_get_redirected_stdout();
	size_t n = fread(text, 1, sizeof(text) - 1, out);
	text[n] = '\0';
	cr_expect(strstr(text, "leaked 4.0 KiB in 1 file   "), "%s", text);
	cr_expect(strstr(text, "  1 file, 1 segment  "), "%s", text);
	cr_expect(strstr(text, "shape: {req}_{int}_{int}  1 file  "), "%s", text);
	cr_expect(!strstr(text, " 1 files") && !strstr(text, " 1 segments"), "%s", text);
}

/* Issue 31 §4: the JUnit cases are (command, shape), in every run: each
 * command that made files, with each pattern (and "(shim tag)" where its
 * tagged files' names match none), passing where its aborted requests
 * left no such file; "no aborted request leaked" only when no command
 * made a file. */
static char *junit(struct audit_abort *aborts, unsigned naborts, const struct audit_commands *commands)
{
	struct audit_opts o = {.reports.junit_path = "report.xml"};
	struct audit a = {.o = &o, .abort_set = {.aborts = aborts, .naborts = naborts, .commands = *commands},
			  .run.probe = "test", .run.cmd_status = -1, .attribution.patterns = &o.patterns};
	static char xml[8192];
	char err[200];
	ssize_t n;

	cr_assert_eq(sg_patterns_parse(&o.patterns, "{req}_{int}_{int};shm_{req}", err, sizeof(err)), 0, "%s", err);
	cr_assert_geq(a.run.junit_fd = memfd_create("report", 0), 0);
	cr_assert_not_null(a.files = audit_files_new(10));
	bool failed[AUDIT_REPORT_FILES];
	audit_report_write(&a, failed);
	cr_expect_not(failed[1]);
	cr_assert_geq(n = pread(a.run.junit_fd, xml, sizeof(xml) - 1, 0), 0);
	xml[n] = '\0';
	close(a.run.junit_fd);
	audit_files_free(a.files);
	return xml;
}

/* A case's name attribute. */
static const char *case_name(const char *name)
{
	static char buf[4][128];
	static unsigned k;

	snprintf(buf[k % 4], sizeof(buf[0]), "name=\"%s\"", name);
	return buf[k++ % 4];
}

static int occurrences(const char *text, const char *what)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

Test(report, junit_cases_are_every_command_and_shape_leaking_or_not, .init = cr_redirect_stdout)
{
	struct audit_commands commands = {.n = 2, .seen = {{"stage1", false}, {"stage2", true}}};
	struct audit_abort leaky = {.request = "r1", .leaked_bytes = 500, .leaked_files = 1, .leaked_segments = 1,
				    .leftovers = leftover(NULL, "stage1", 10, 0, 500)};
	struct audit_abort clean = {.request = "r1"};
	const char *names[] = {"stage1 {req}_{int}_{int}", "stage1 shm_{req}", "stage2 (shim tag)",
			       "stage2 {req}_{int}_{int}", "stage2 shm_{req}"};
	char *xml = junit(&leaky, 1, &commands);

	cr_expect(strstr(xml, "tests=\"5\" failures=\"1\""), "%s", xml);
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		cr_expect_eq(occurrences(xml, case_name(names[i])), 1, "%s: %s", names[i], xml);
	cr_expect(strstr(xml, "name=\"stage1 {req}_{int}_{int}\" time=\"0\">\n      <properties>\n        "
			      "<property name=\"pids\" value=\"10\"/>"), "%s", xml);
	cr_expect_eq(occurrences(xml, "<failure type=\"leak\""), 1, "%s", xml);
	cr_expect_null(strstr(xml, "no aborted request leaked"), "%s", xml);

	/* Fixed: the same cases, each passing. */
	xml = junit(&clean, 1, &commands);
	cr_expect(strstr(xml, "tests=\"5\" failures=\"0\""), "%s", xml);
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		cr_expect_eq(occurrences(xml, case_name(names[i])), 1, "%s: %s", names[i], xml);
	cr_expect_eq(occurrences(xml, "<system-out>no aborted request left a file of this shape</system-out>"), 5, "%s",
		     xml);
	cr_expect_null(strstr(xml, "<failure"), "%s", xml);

	/* No command made a file: the one passing case. */
	xml = junit(&clean, 1, &(struct audit_commands){0});
	cr_expect(strstr(xml, "tests=\"1\" failures=\"0\""), "%s", xml);
	cr_expect(strstr(xml, "name=\"no aborted request leaked\""), "%s", xml);
}
