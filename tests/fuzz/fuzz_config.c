/* libFuzzer target: the SHMGUARD_* values.  Input: up to six lines, one per
 * variable, in the order below. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

static const char *const vars[] = {"SHMGUARD_PATTERNS",   "SHMGUARD_SHM_ROOTS", "SHMGUARD_ABORT_DIR",
				   "SHMGUARD_REQUEST_ID", "SHMGUARD_ABORT_TTL", "SHMGUARD_LOG"};

static const char *value_of(const char *name, void *ctx)
{
	char **values = ctx;

	for (unsigned k = 0; k < 6; k++)
		if (strcmp(name, vars[k]) == 0)
			return values[k];
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sg_config cfg;
	char buf[4096], err[256];
	char *line = buf, *next, *values[6] = {0};
	unsigned i = 0;

	if (size >= sizeof(buf) || memchr(data, '\0', size))
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (; line && i < 6; line = next, i++) {
		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		if (strcmp(line, "-") != 0) /* a lone '-' leaves the variable unset */
			values[i] = line;
	}
	if (sg_config_from(&cfg, value_of, values, err, sizeof(err)) == 0) {
		/* What the shim relies on once the configuration is accepted. */
		if (!cfg.roots.n || cfg.roots.n > SG_MAX_ROOTS || cfg.abort_dir[0] != '/' || !cfg.abort_ttl)
			abort();
		for (unsigned k = 0; k < cfg.roots.n; k++)
			if (cfg.roots.dir[k][0] != '/' || strcmp(cfg.roots.dir[k], cfg.abort_dir) == 0 ||
			    strlen(cfg.roots.dir[k]) != cfg.roots.len[k])
				abort();
	} else if (!strstr(err, "SHMGUARD_")) {
		abort(); /* every fault names its variable */
	}
	return 0;
}
