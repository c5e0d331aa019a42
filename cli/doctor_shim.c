#include "doctor_shim.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* Whether the last path component of the len bytes at s is the shim's. */
static bool is_shim(const char *s, size_t len)
{
	size_t n = strlen(SG_SHIM_NAME);

	return len >= n && memcmp(s + len - n, SG_SHIM_NAME, n) == 0 && (len == n || s[len - n - 1] == '/');
}

/* The shim as this process maps it, into path: whether it does. */
static bool mapped_shim(char *path, size_t size)
{
	char line[PATH_MAX + 128];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "re");

	while (f && !found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		size_t len = p ? strcspn(p, "\n") : 0;

		if (p && is_shim(p, len)) {
			snprintf(path, size, "%.*s", (int)len, p);
			found = true;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* The entry of LD_PRELOAD (blank- or colon-separated) that names the shim. */
static bool preload_names_shim(char *path, size_t size)
{
	const char *s = getenv("LD_PRELOAD");

	while (s && *s) {
		size_t skip = strspn(s, " :"), len;

		s += skip;
		len = strcspn(s, " :");
		if (len && is_shim(s, len)) {
			snprintf(path, size, "%.*s", (int)len, s);
			return true;
		}
		s += len;
	}
	return false;
}

/* The newest GLIBC_x.y version the library at path needs, into *major and
 * *minor: 0, or -1 when it cannot be read as ELF. */
static int glibc_needed(const char *path, unsigned *major, unsigned *minor)
{
	Elf_Scn *scn = NULL;
	Elf *elf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC), status = -1;

	*major = *minor = 0;
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		errno = ENOEXEC;
		goto cleanup;
	}
	status = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Verneed vn;
		int off = 0;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_GNU_verneed || !(data = elf_getdata(scn, NULL)))
			continue;
		/* Bounded by the section's own count, and by libelf's checks of
		 * each offset against the data. */
		for (GElf_Word i = 0; i < sh.sh_info && gelf_getverneed(data, off, &vn); i++) {
			GElf_Vernaux aux;
			int aoff = off + (int)vn.vn_aux;

			for (unsigned k = 0; k < vn.vn_cnt && gelf_getvernaux(data, aoff, &aux); k++) {
				const char *name = elf_strptr(elf, sh.sh_link, aux.vna_name);
				unsigned a, b;

				if (name && sscanf(name, "GLIBC_%u.%u", &a, &b) == 2 &&
				    (a > *major || (a == *major && b > *minor))) {
					*major = a;
					*minor = b;
				}
				if (!aux.vna_next)
					break;
				aoff += (int)aux.vna_next;
			}
			if (!vn.vn_next)
				break;
			off += (int)vn.vn_next;
		}
	}
cleanup:
	if (elf)
		elf_end(elf);
	close(fd);
	return status;
}

/* Whether this libc can load the shim at path, said as a line: the newest
 * glibc its symbol versions name, and never less than the floor it is built
 * and tested for (core/glibc_floor.h, tests/tools/glibc_floor.sh). */
static int check_glibc(doctor_line_fn *line, const char *path)
{
	unsigned major, minor, floor_major = 0, floor_minor = 0, have_major = 0, have_minor = 0;
	const char *have = gnu_get_libc_version();

	sscanf(have, "%u.%u", &have_major, &have_minor);
	sscanf(SHMGUARD_GLIBC_FLOOR, "%u.%u", &floor_major, &floor_minor);
	if (glibc_needed(path, &major, &minor) < 0)
		return line("", false, "  %s cannot be read as a library: %s", path, strerror(errno));
	if (major < floor_major || (major == floor_major && minor < floor_minor)) {
		major = floor_major;
		minor = floor_minor;
	}
	if (major > have_major || (major == have_major && minor > have_minor))
		return line("", false, "  it needs glibc %u.%u and this is glibc %s: the loader refuses it here", major,
			    minor, have);
	return line("", true, "  it needs glibc %u.%u or later; this is glibc %s", major, minor, have);
}

int doctor_shim(doctor_line_fn *line)
{
	char mapped[PATH_MAX], named[PATH_MAX], installed[PATH_MAX];

	if (mapped_shim(mapped, sizeof(mapped))) {
		line("preload", true, "the shim is preloaded in this process (%s): programs started with this "
				      "environment run under it", mapped);
		return check_glibc(line, mapped);
	}
	if (preload_names_shim(named, sizeof(named))) {
		line("preload", false, "the shim is NOT loaded: LD_PRELOAD names %s but the loader did not load it",
		     named);
		if (access(named, R_OK) < 0)
			return line("", false, "  %s: %s%s", named, strerror(errno),
				    named[0] == '/' ? "" : " (give an absolute path: the loader does not search the current directory)") | 1;
		return check_glibc(line, named) | 1;
	}
	line("preload", true, "the shim is not preloaded here (LD_PRELOAD does not name " SG_SHIM_NAME ")");
	/* Where it is, or that it is missing, the shim line has said. */
	return cli_find_shim(NULL, installed) == 0 ? check_glibc(line, installed) : 0;
}
