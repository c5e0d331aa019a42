/* How a subcommand speaks on stderr: "shmguard SUBCOMMAND: message" (cli.h).
 * Kept apart from main.c, so that no command depends on the dispatcher. */
#include <stdarg.h>
#include <stdio.h>

#include "cli.h"

static void vsay(const char *sub, const char *fmt, va_list ap)
{
	fprintf(stderr, "shmguard %s: ", sub);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int cli_fail(int code, const char *sub, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(sub, fmt, ap);
	va_end(ap);
	return code;
}

int cli_try_help(int code, const char *sub)
{
	fprintf(stderr, "Try 'shmguard %s --help' for more information.\n", sub);
	return code;
}

int cli_usage_fail(int code, const char *sub, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(sub, fmt, ap);
	va_end(ap);
	return cli_try_help(code, sub);
}

int cli_version(void)
{
	printf("shmguard %s\n", SHMGUARD_VERSION);
	return EXIT_OK;
}

void cli_warn(const char *sub, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(sub, fmt, ap);
	va_end(ap);
}
