/* _exit and _Exit: a process that ends without exit() (a fork child's
 * usual end: every Python multiprocessing worker) runs no destructor, and
 * would leave its ownership journals behind although none of its files
 * remain.  Nothing else of the shim runs here: the process is going. */
#include <stdlib.h>
#include <unistd.h>

#include "real.h"
#include "registry.h"
#include "state.h"

SG_EXPORT void _exit(int status)
{
	sg_real_ensure();
	sg_registry_exit(false);
	sg_real.exit_now(status);
	__builtin_unreachable();
}

SG_EXPORT void _Exit(int status)
{
	sg_real_ensure();
	sg_registry_exit(false);
	sg_real.exit_now(status);
	__builtin_unreachable();
}
