#include "marker.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

unsigned sg_markers_expire(const char *dir, unsigned ttl)
{
	DIR *d = opendir(dir);
	time_t now = time(NULL);
	uid_t euid = geteuid();
	unsigned removed = 0;
	struct dirent *e;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		struct stat st;

		if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && sg_marker_owner_ok(&st, euid) &&
		    now - st.st_mtime > (time_t)ttl && unlinkat(dirfd(d), e->d_name, 0) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}
