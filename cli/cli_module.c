/* Loading the command's modules (cli_module.h). */
#include "cli_module.h"

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const void *cli_module_load(const char *name, char *err, size_t errlen)
{
	char exe[PATH_MAX], path[PATH_MAX + 64];
	const char *const *version;
	ssize_t n;
	void *h;

	snprintf(path, sizeof(path), "%s/%s", SHMGUARD_PKGLIBDIR, name);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char candidate[PATH_MAX + 64];

		exe[n] = '\0';
		snprintf(candidate, sizeof(candidate), "%s/%s", dirname(exe), name);
		if (access(candidate, R_OK) == 0)
			snprintf(path, sizeof(path), "%s", candidate);
	}
	/* dlopen gives the same handle to a module loaded already. */
	if (!(h = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		snprintf(err, errlen, "cannot load %s: %s", name, dlerror());
		return NULL;
	}
	version = dlsym(h, SG_MODULE_SYMBOL);
	if (!version || strcmp(*version, SHMGUARD_VERSION) != 0) {
		snprintf(err, errlen, "cannot use %s: %s", path,
			 version ? "it is of another shmguard version" : "it is no shmguard module");
		dlclose(h);
		return NULL;
	}
	return version;
}
