#include "core.h"
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reqid.h"
#include "duration.h"

int sg_config_check_dir(const char *path, char *out, const char **why)
{
	size_t len = strlen(path);

	if (path[0] != '/')
		return *why = "not an absolute path", -EINVAL;
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len == 1)
		return *why = "'/' itself is not allowed", -EINVAL;
	if (len > SG_PATH_MAX)
		return *why = "path too long", -EINVAL;
	for (const char *c = path; c < path + len;) {
		const char *next = memchr(c + 1, '/', (size_t)(path + len - c - 1));
		size_t clen = (next ? (size_t)(next - c) : (size_t)(path + len - c)) - 1;

		if (clen == 0 || (clen == 1 && c[1] == '.') || (clen == 2 && c[1] == '.' && c[2] == '.'))
			return *why = "empty, '.' or '..' path component", -EINVAL;
		c = next ? next : path + len;
	}
	memcpy(out, path, len);
	out[len] = '\0';
	return 0;
}

int sg_config_parse_ttl(const char *v, unsigned *ttl)
{
	double s;

	/* A duration (600, 10m, 1h) of whole seconds. */
	if (sg_parse_duration(v, &s) < 0 || s < 1 || s > SG_MAX_ABORT_TTL || s != (double)(unsigned)s)
		return -EINVAL;
	*ttl = (unsigned)s;
	return 0;
}

int sg_roots_add(struct sg_roots *r, const char *dir, const char **why)
{
	char norm[SG_PATH_MAX + 1];
	int ret = sg_config_check_dir(dir, norm, why);

	if (ret < 0)
		return ret;
	for (unsigned k = 0; k < r->n; k++)
		if (strcmp(r->dir[k], norm) == 0)
			return 0;
	if (r->n == SG_MAX_ROOTS)
		return *why = "more than 8 roots", -E2BIG;
	strcpy(r->dir[r->n], norm);
	r->len[r->n++] = strlen(norm);
	return 0;
}

int sg_roots_add_list(struct sg_roots *r, const char *list, const char **why)
{
	for (const char *start = list;;) {
		const char *end = strchr(start, ':');
		size_t len = end ? (size_t)(end - start) : strlen(start);
		char dir[SG_PATH_MAX + 1];
		int ret;

		if (len > SG_PATH_MAX)
			return *why = "a directory path is too long", -ENAMETOOLONG;
		memcpy(dir, start, len);
		dir[len] = '\0';
		if ((ret = sg_roots_add(r, dir, why)) < 0)
			return ret;
		if (!end)
			return 0;
		start = end + 1;
	}
}

int sg_roots_check_abort_dir(const struct sg_roots *r, const char *abort_dir, const char **why)
{
	for (unsigned k = 0; k < r->n; k++)
		if (strcmp(abort_dir, r->dir[k]) == 0)
			return *why = SG_ABORT_DIR_IS_ROOT, -EINVAL;
	return 0;
}

static int bad(char *err, size_t errlen, const char *var, const char *val, const char *why)
{
	snprintf(err, errlen, "%s='%.80s': %s", var, val, why);
	return -EINVAL;
}

static const char *from_environ(const char *name, void *ctx)
{
	(void)ctx;
	return getenv(name);
}

int sg_config_from_env(struct sg_config *c, char *err, size_t errlen)
{
	return sg_config_from(c, from_environ, NULL, err, errlen);
}

int sg_config_from(struct sg_config *c, const char *(*get)(const char *name, void *ctx), void *ctx, char *err,
		   size_t errlen)
{
	const char *v, *why;
	char perr[160];

	memset(c, 0, sizeof(*c));
	c->log_level = SG_LOG_WARN;
	c->abort_ttl = SG_DEFAULT_ABORT_TTL;
	sg_roots_add(&c->roots, SG_DEFAULT_ROOT, &why);
	strcpy(c->abort_dir, SG_DEFAULT_ABORT_DIR);
	c->tag_journal = true;

	if ((v = get("SHMGUARD_LOG", ctx))) {
		static const char *names[] = {"off", "warn", "info", "debug"};
		unsigned k;
		for (k = 0; k < 4 && strcmp(v, names[k]) != 0; k++)
			;
		if (k == 4)
			return bad(err, errlen, "SHMGUARD_LOG", v, "expected off, warn, info or debug");
		c->log_level = (enum sg_log_level)k;
	}
	if ((v = get("SHMGUARD_PATTERNS", ctx)) && *v && sg_patterns_parse(&c->patterns, v, perr, sizeof(perr)) < 0)
		return bad(err, errlen, "SHMGUARD_PATTERNS", v, perr);
	if ((v = get("SHMGUARD_SHM_ROOTS", ctx)) && *v && sg_roots_add_list(&c->roots, v, &why) < 0)
		return bad(err, errlen, "SHMGUARD_SHM_ROOTS", v, why);
	if ((v = get("SHMGUARD_ABORT_DIR", ctx)) && sg_config_check_dir(v, c->abort_dir, &why) < 0)
		return bad(err, errlen, "SHMGUARD_ABORT_DIR", v, why);
	if ((v = get("SHMGUARD_REQUEST_ID", ctx)) && *v) {
		if (sg_reqid_check(v, &why) < 0)
			return bad(err, errlen, "SHMGUARD_REQUEST_ID", v, why);
		strcpy(c->request_id, v);
	}
	if (sg_roots_check_abort_dir(&c->roots, c->abort_dir, &why) < 0)
		return bad(err, errlen, "SHMGUARD_ABORT_DIR", c->abort_dir, why);
	if ((v = get("SHMGUARD_ABORT_TTL", ctx)) && sg_config_parse_ttl(v, &c->abort_ttl) < 0)
		return bad(err, errlen, "SHMGUARD_ABORT_TTL", v, "expected a duration of whole seconds from 1 to 604800 (600, 10m, 1h)");
	if ((v = get("SHMGUARD_TAG", ctx))) {
		bool journal = strcmp(v, "journal") == 0, xattr = strcmp(v, "xattr") == 0, both = strcmp(v, "both") == 0;
		if (!journal && !xattr && !both && strcmp(v, "off") != 0)
			return bad(err, errlen, "SHMGUARD_TAG", v, "expected journal, xattr, both or off");
		c->tag_journal = journal || both;
		c->tag_xattr = xattr || both;
	}
	return 0;
}
