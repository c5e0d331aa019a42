/* shmguard doctor --binary: reads the program's ELF headers (libelf). */
#include "doctor.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Dynamically linked against glibc, and not set-id: LD_PRELOAD applies. */
int doctor_binary(const char *path)
{
	bool dynamic = false, libc = false;
	struct stat st;
	Elf_Scn *scn = NULL;
	size_t nph;
	Elf *elf;
	int fd;

	if (stat(path, &st) < 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return doctor_line("binary", false, "%s: %s", path, strerror(errno));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph) < 0) {
		if (elf)
			elf_end(elf);
		close(fd);
		return doctor_line("binary", false, "%s is not an ELF program (a script runs its interpreter: check that)",
			    path);
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_INTERP)
			dynamic = true;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t k = 0; k < sh.sh_size / sh.sh_entsize; k++) {
			GElf_Dyn dyn;
			const char *name;
			if (gelf_getdyn(data, (int)k, &dyn) && dyn.d_tag == DT_NEEDED &&
			    (name = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val)) && strncmp(name, "libc.so", 7) == 0)
				libc = true;
		}
	}
	elf_end(elf);
	close(fd);
	if (!dynamic)
		return doctor_line("binary", false, "%s is statically linked: LD_PRELOAD cannot reach its calls", path);
	if (!libc)
		return doctor_line("binary", false, "%s does not link libc.so directly (Go, or raw system calls?): its "
					    "files are probably not created through libc",
			    path);
	if (st.st_mode & (S_ISUID | S_ISGID))
		return doctor_line("binary", false, "%s is set-id: the loader ignores LD_PRELOAD for it", path);
	return doctor_line("binary", true, "%s is dynamically linked against libc and not set-id: it can run under the shim",
		    path);
}

