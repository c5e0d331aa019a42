#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "reqid.h"

static struct sg_config cfg;
static char err[256];

static void clear_env(void)
{
	static const char *vars[] = {"SHMGUARD_PATTERNS",   "SHMGUARD_SHM_ROOTS", "SHMGUARD_ABORT_DIR",
				     "SHMGUARD_REQUEST_ID", "SHMGUARD_ABORT_TTL", "SHMGUARD_LOG", "SHMGUARD_TAG"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

TestSuite(config, .init = clear_env);

Test(config, defaults)
{
	cr_assert_eq(sg_config_from_env(&cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(cfg.roots.n, 1);
	cr_assert_str_eq(cfg.roots.dir[0], "/dev/shm");
	cr_assert_str_eq(cfg.abort_dir, SG_DEFAULT_ABORT_DIR);
	cr_assert_eq(cfg.abort_ttl, 600);
	cr_assert_eq(cfg.log_level, SG_LOG_WARN);
	cr_assert_eq(cfg.patterns.count, 0);
	cr_assert_str_eq(cfg.request_id, "");
	cr_assert(cfg.tag_journal);
	cr_assert(!cfg.tag_xattr);
}

Test(config, tag_modes)
{
	static const struct {
		const char *value;
		bool journal, xattr;
	} modes[] = {{"journal", true, false}, {"xattr", false, true}, {"both", true, true}, {"off", false, false}};

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		setenv("SHMGUARD_TAG", modes[i].value, 1);
		cr_assert_eq(sg_config_from_env(&cfg, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(cfg.tag_journal, modes[i].journal, "%s", modes[i].value);
		cr_assert_eq(cfg.tag_xattr, modes[i].xattr, "%s", modes[i].value);
	}
}

Test(config, every_variable)
{
	setenv("SHMGUARD_PATTERNS", "{req}_{int}_{int};shm_{req}_{int}_{int}_lockfile.lock", 1);
	setenv("SHMGUARD_SHM_ROOTS", "/run/shm2/:/dev/shm:/tmp/x", 1);
	setenv("SHMGUARD_ABORT_DIR", "/dev/shm/aborts/", 1);
	setenv("SHMGUARD_REQUEST_ID", "req-1", 1);
	setenv("SHMGUARD_ABORT_TTL", "30", 1);
	setenv("SHMGUARD_LOG", "debug", 1);
	setenv("SHMGUARD_TAG", "off", 1);
	cr_assert_eq(sg_config_from_env(&cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(cfg.patterns.count, 2);
	cr_assert_eq(cfg.roots.n, 3, "duplicate /dev/shm is kept once");
	cr_assert_str_eq(cfg.roots.dir[1], "/run/shm2");
	cr_assert_str_eq(cfg.roots.dir[2], "/tmp/x");
	cr_assert_str_eq(cfg.abort_dir, "/dev/shm/aborts");
	cr_assert_str_eq(cfg.request_id, "req-1");
	cr_assert_eq(cfg.abort_ttl, 30);
	setenv("SHMGUARD_ABORT_TTL", "10m", 1);
	cr_assert_eq(sg_config_from_env(&cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(cfg.abort_ttl, 600, "a TTL takes units, as every duration does");
	cr_assert_eq(cfg.log_level, SG_LOG_DEBUG);
	cr_assert(!cfg.tag_xattr);
	cr_assert(!cfg.tag_journal);
}

static void rejects(const char *var, const char *value)
{
	clear_env();
	setenv(var, value, 1);
	cr_assert_eq(sg_config_from_env(&cfg, err, sizeof(err)), -EINVAL, "%s='%s' should be rejected", var, value);
	cr_assert(strstr(err, var), "message '%s' names %s", err, var);
}

Test(config, bad_values_name_their_variable)
{
	rejects("SHMGUARD_PATTERNS", "no-placeholder");
	rejects("SHMGUARD_SHM_ROOTS", "relative/dir");
	rejects("SHMGUARD_SHM_ROOTS", "/");
	rejects("SHMGUARD_SHM_ROOTS", "/dev/shm/../etc");
	rejects("SHMGUARD_SHM_ROOTS", "/a:/b:/c:/d:/e:/f:/g:/h:/i");
	rejects("SHMGUARD_ABORT_DIR", "dev/shm/x");
	rejects("SHMGUARD_ABORT_DIR", "/dev//shm");
	rejects("SHMGUARD_ABORT_DIR", "/dev/shm");
	rejects("SHMGUARD_ABORT_DIR", "/dev/shm/");
	rejects("SHMGUARD_REQUEST_ID", "a/b");
	rejects("SHMGUARD_REQUEST_ID", "..");
	rejects("SHMGUARD_ABORT_TTL", "0");
	rejects("SHMGUARD_ABORT_TTL", "-5");
	rejects("SHMGUARD_ABORT_TTL", "10x");
	rejects("SHMGUARD_ABORT_TTL", "1.5");
	rejects("SHMGUARD_ABORT_TTL", "8d");
	rejects("SHMGUARD_ABORT_TTL", "");
	rejects("SHMGUARD_LOG", "verbose");
	rejects("SHMGUARD_TAG", "on");
	rejects("SHMGUARD_TAG", "");
	rejects("SHMGUARD_TAG", "journal,xattr");
}

Test(config, bad_value_keeps_the_requested_log_level)
{
	setenv("SHMGUARD_LOG", "off", 1);
	setenv("SHMGUARD_PATTERNS", "{x}", 1);
	cr_assert_eq(sg_config_from_env(&cfg, err, sizeof(err)), -EINVAL);
	cr_assert_eq(cfg.log_level, SG_LOG_OFF);
}

static const char *reqid_refusal(const char *id)
{
	const char *why = "not set";
	int ret = sg_reqid_check(id, &why);

	cr_assert(ret == 0 || ret == -EINVAL, "%d", ret);
	cr_assert_eq(ret < 0, why != NULL, "a reason exactly when refused");
	cr_assert_eq(sg_reqid_invalid(id), ret < 0);
	return why;
}

Test(reqid, file_name_rules)
{
	char longid[300];
	memset(longid, 'x', sizeof(longid));
	longid[256] = '\0';
	cr_expect_str_eq(reqid_refusal("") ?: "", "it is empty");
	cr_assert_not_null(reqid_refusal("."));
	cr_assert_not_null(reqid_refusal(".."));
	cr_expect_str_eq(reqid_refusal("a/b") ?: "", "it contains '/'");
	cr_assert_not_null(reqid_refusal(longid));
	longid[255] = '\0';
	cr_assert_null(reqid_refusal(longid));
	cr_assert_null(reqid_refusal("0"));
	cr_assert_null(reqid_refusal("..."));
	cr_assert_null(reqid_refusal("chatcmpl-42"));
}

/* One root-list parser for the shim, ls, sweep, doctor and audit (#12). */
Test(roots, normalised_and_kept_once)
{
	struct sg_roots r = {0};
	const char *why = NULL;

	cr_assert_eq(sg_roots_add(&r, "/dev/shm", &why), 0);
	cr_assert_eq(sg_roots_add(&r, "/dev/shm/", &why), 0);
	cr_assert_eq(sg_roots_add(&r, "/dev/shm//", &why), 0);
	cr_assert_eq(sg_roots_add_list(&r, "/run/shm2/:/dev/shm:/run/shm2", &why), 0);
	cr_assert_eq(r.n, 2);
	cr_assert_str_eq(r.dir[1], "/run/shm2");
	cr_assert_eq(r.len[1], strlen("/run/shm2"));
	cr_assert_lt(sg_roots_add(&r, "relative", &why), 0);
	cr_assert_not_null(why);
	cr_assert_lt(sg_roots_add_list(&r, "/a:/b/../c", &why), 0);
	cr_assert_not_null(why);
	cr_assert_eq(r.n, 3, "/a went in before /b/../c was refused");
	for (int i = 0; i < 2 * SG_MAX_ROOTS && r.n < SG_MAX_ROOTS; i++) {
		char dir[32];
		snprintf(dir, sizeof(dir), "/x/%d", i / 2); /* each twice */
		cr_assert_eq(sg_roots_add(&r, dir, &why), 0);
	}
	cr_assert_eq(r.n, SG_MAX_ROOTS, "repeats took no room");
	cr_assert_eq(sg_roots_add(&r, "/one/more", &why), -E2BIG);
	cr_assert_not_null(why);
	cr_assert_eq(sg_roots_add(&r, "/dev/shm/", &why), 0, "a root already there is not one more");
}

Test(roots, the_abort_directory_is_no_root)
{
	struct sg_roots r = {0};
	const char *why = NULL;

	sg_roots_add_list(&r, "/dev/shm:/run/shm2/", &why);
	cr_assert_eq(sg_roots_check_abort_dir(&r, "/dev/shm/shmguard-abort", &why), 0);
	cr_assert_lt(sg_roots_check_abort_dir(&r, "/dev/shm", &why), 0);
	cr_assert_not_null(why);
	cr_assert_lt(sg_roots_check_abort_dir(&r, "/run/shm2", &why), 0);
	cr_assert_not_null(why);
	clear_env();
	setenv("SHMGUARD_SHM_ROOTS", "/run/shm2/", 1);
	setenv("SHMGUARD_ABORT_DIR", "/run/shm2//", 1);
	cr_assert_eq(sg_config_from_env(&cfg, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "must not be a shm root"), "%s", err);
}
