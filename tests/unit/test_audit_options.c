/* shmguard audit's options as its front door reads them, without BPF or
 * root: the defaults the gate depends on.  The file under test is
 * included to reach its option parser, which nothing else exports. */
#include "../../cli/cmd_audit.c"

#include <criterion/criterion.h>
#include <stdarg.h>

/* main.c's, which brings every subcommand: what the parser calls of it. */
int cli_version(void)
{
	return 0;
}

static void say(const char *sub, const char *fmt, va_list ap)
{
	fprintf(stderr, "shmguard %s: ", sub);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int cli_usage_fail(int code, const char *sub, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(sub, fmt, ap);
	va_end(ap);
	return code;
}

int cli_fail(int code, const char *sub, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(sub, fmt, ap);
	va_end(ap);
	return code;
}

void cli_warn(const char *sub, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(sub, fmt, ap);
	va_end(ap);
}

int cli_try_help(int code, const char *sub)
{
	fprintf(stderr, "shmguard %s: try --help\n", sub);
	return code;
}

/* Parses the words (NULL-ended) into *o: parse_options' status. */
static int parse(struct audit_opts *o, const char *const *words)
{
	char *argv[32];
	const char *lib = NULL;
	int argc = 0;

	argv[argc++] = "audit";
	for (size_t i = 0; words[i]; i++) {
		cr_assert_lt(argc, 31);
		argv[argc++] = (char *)words[i];
	}
	argv[argc] = NULL;
	optind = 0; /* getopt starts over */
	*o = (struct audit_opts){0};
	return parse_options(argc, argv, o, &lib);
}

/* A gate with a budget and no --min-aborts needs one abort measured: a
 * gate that saw nothing fails. */
Test(audit_options, a_budget_alone_asks_for_one_abort)
{
	struct audit_opts o;

	cr_assert_eq(parse(&o, (const char *[]){"--max-kib-per-abort", "64", "--", "/bin/true", NULL}), 0);
	cr_assert(o.gate.have_budget);
	cr_assert_eq(o.gate.min_aborts, 1, "the default --min-aborts is 1, not %u", o.gate.min_aborts);
	cr_assert_eq(parse(&o, (const char *[]){"--max-kib-per-abort", "64", "--min-aborts", "0", "--", "/bin/true",
						 NULL}),
		     0);
	cr_assert_eq(o.gate.min_aborts, 0, "an explicit 0 is the user's");
	cr_assert_eq(parse(&o, (const char *[]){"--max-kib-per-abort", "64", "--min-aborts", "7", "--", "/bin/true",
						 NULL}),
		     0);
	cr_assert_eq(o.gate.min_aborts, 7);
	/* Without a budget there is no gate, and no floor to give. */
	cr_assert_eq(parse(&o, (const char *[]){"--", "/bin/true", NULL}), 0);
	cr_assert_eq(o.gate.min_aborts, 0);
	cr_assert_lt(parse(&o, (const char *[]){"--min-aborts", "2", "--", "/bin/true", NULL}), 0);
}
