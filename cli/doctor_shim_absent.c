/* shmguard doctor's preload checks in a build without libelf, which
 * reads the glibc versions the shim needs: a line saying so (not a
 * failure: nothing was found wrong). */
#include "doctor_shim.h"

int doctor_shim(doctor_line_fn *line)
{
	return line("preload", true, "not checked: this shmguard was built without libelf (libelf-dev)");
}
