/* shmguard doctor --binary in a build without libelf, which reads the
 * program's headers: said as a failed check, since nothing was checked. */
#include "doctor.h"

int doctor_binary(const char *path)
{
	return doctor_line("binary", false, "%s: not checked: this shmguard was built without libelf (libelf-dev)",
			   path);
}
