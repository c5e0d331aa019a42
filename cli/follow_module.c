/* abort --follow's module (PCRE2): its one export (cli_module.h). */
#include "cli_module.h"

__attribute__((visibility("default"))) const struct sg_module_follow shmguard_module = {
	.version = SHMGUARD_VERSION,
	.abort_follow = abort_follow,
};
