/* shmguard doctor's report: each check's lines, on stdout or, with --json,
 * gathered as objects for the JSON report. */
#include "doctor_report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* With --json, the checks go here instead of onto stdout: an object per
 * named line, the lines below it its details and notes. */
static json_t *json_checks;

/* The message of fmt, its leading spaces (the text's indentation) left out,
 * set as o[key]. */
static void json_set_message(json_t *o, const char *key, const char *fmt, va_list ap)
{
	char *msg = NULL;

	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	cli_json_set_text(o, key, msg ? msg + strspn(msg, " ") : "out of memory");
	free(msg);
}

/* The check a detail or note belongs to: the last named one. */
static json_t *json_last_check(void)
{
	return json_array_get(json_checks, json_array_size(json_checks) - 1);
}

int doctor_line(const char *what, bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (json_checks) {
		json_t *o = json_object();

		if (what[0])
			cli_json_set_text(o, "name", what);
		json_object_set_new(o, "verdict", json_string(ok ? "ok" : "fail"));
		json_set_message(o, "reason", fmt, ap);
		if (what[0]) {
			json_object_set_new(o, "details", json_array());
			json_object_set_new(o, "notes", json_array());
			json_array_append_new(json_checks, o);
		} else {
			json_array_append_new(json_object_get(json_last_check(), "details"), o);
		}
	} else {
		printf("%-10s %-4s ", what, ok ? "ok" : "FAIL");
		vprintf(fmt, ap);
		putchar('\n');
	}
	va_end(ap);
	return ok ? 0 : 1;
}

void doctor_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (json_checks) {
		json_t *o = json_object();

		json_set_message(o, "note", fmt, ap);
		json_array_append(json_object_get(json_last_check(), "notes"), json_object_get(o, "note"));
		json_decref(o);
	} else {
		printf("%13s", "");
		vprintf(fmt, ap);
		putchar('\n');
	}
	va_end(ap);
}

int doctor_report_to_json(void)
{
	return (json_checks = json_array()) ? 0 : -1;
}

json_t *doctor_report_checks(void)
{
	return json_checks;
}

void doctor_report_end(void)
{
	json_decref(json_checks);
	json_checks = NULL;
}
