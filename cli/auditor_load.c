/* shmguard audit, watch and doctor's BPF checks: each loads the auditor's
 * module (auditor_module.h) and runs its own entry point there.  The module
 * is next to this program in a build tree, else in the package's private
 * directory (LIBDIR/shmguard, beside the shim). */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "auditor_module.h"
#include "cli.h"
#include "doctor.h"

/* shmguard audit's own: 3, tracing is not possible here. */
#define AUDIT_NOT_LOADED 3

/* The module's entry points, or NULL with why (err) it cannot be loaded. */
static const struct sg_auditor_module *load(char *err, size_t errlen)
{
	static const struct sg_auditor_module *loaded;
	char exe[PATH_MAX], path[PATH_MAX + 32];
	const struct sg_auditor_module *m;
	ssize_t n;
	void *h;

	if (loaded)
		return loaded;
	snprintf(path, sizeof(path), "%s/" SG_AUDITOR_MODULE_NAME, SHMGUARD_PKGLIBDIR);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char candidate[PATH_MAX + 32];

		exe[n] = '\0';
		snprintf(candidate, sizeof(candidate), "%s/" SG_AUDITOR_MODULE_NAME, dirname(exe));
		if (access(candidate, R_OK) == 0)
			snprintf(path, sizeof(path), "%s", candidate);
	}
	if (!(h = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		snprintf(err, errlen, "cannot load the auditor: %s", dlerror());
		return NULL;
	}
	m = dlsym(h, SG_AUDITOR_MODULE_SYMBOL);
	if (!m || strcmp(m->version, SHMGUARD_VERSION) != 0) {
		snprintf(err, errlen, "cannot use the auditor %s: %s", path,
			 m ? "it is of another shmguard version" : "it is no shmguard auditor");
		dlclose(h);
		return NULL;
	}
	return loaded = m;
}

int cmd_audit(int argc, char **argv)
{
	const struct sg_auditor_module *m;
	char err[PATH_MAX + 256];

	if (!(m = load(err, sizeof(err))))
		return cli_fail(AUDIT_NOT_LOADED, "audit", "%s", err);
	return m->cmd_audit(argc, argv);
}

int cmd_watch(int argc, char **argv)
{
	const struct sg_auditor_module *m;
	char err[PATH_MAX + 256];

	if (!(m = load(err, sizeof(err))))
		return cli_fail(EXIT_FAIL, "watch", "%s", err);
	return m->cmd_watch(argc, argv);
}

int doctor_bpf(const struct sg_roots *roots)
{
	const struct sg_auditor_module *m;
	char err[PATH_MAX + 256];

	if (!(m = load(err, sizeof(err))))
		return doctor_line("bpf", false, "%s", err);
	return m->doctor_bpf(roots);
}
