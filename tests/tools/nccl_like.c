/* NCCL's shared-memory transport as tests/integration/test_orphans.c needs
 * it (NCCL is not in Debian): the creator makes DIR/nccl-XXXXXX with
 * mkstemp, sizes and maps it and prints its path; a peer opens and maps it
 * by that path; once the peers are attached the creator unlinks it, so that
 * nothing is left when all exit.  Killed before that unlink, the file
 * stays.
 *   nccl_like create DIR   prints the path, then "unlink" on stdin unlinks
 *                          it (prints "unlinked"); EOF exits without
 *   nccl_like attach PATH  maps it, checks the creator's bytes, prints
 *                          "attached", exits at EOF */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SIZE (1 << 20)
#define STAMP "nccl-like ring"

static int create(const char *dir)
{
	char path[4096], line[64];
	int fd;
	char *p;

	snprintf(path, sizeof(path), "%s/nccl-XXXXXX", dir);
	if ((fd = mkstemp(path)) < 0 || ftruncate(fd, SIZE) < 0 ||
	    (p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		perror("nccl_like create");
		return 1;
	}
	memset(p, 0x5a, SIZE); /* all pages: the bytes a leak costs */
	strcpy(p, STAMP);
	close(fd);
	printf("%s\n", path);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		if (strcmp(line, "unlink\n") == 0) {
			if (unlink(path) < 0) {
				perror("nccl_like unlink");
				return 1;
			}
			printf("unlinked\n");
			fflush(stdout);
		}
	return 0;
}

static int attach(const char *path)
{
	char line[64];
	int fd = open(path, O_RDWR | O_CLOEXEC);
	char *p;

	if (fd < 0 || (p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		perror("nccl_like attach");
		return 1;
	}
	close(fd);
	if (strcmp(p, STAMP) != 0) {
		fprintf(stderr, "nccl_like attach: not the creator's bytes\n");
		return 1;
	}
	printf("attached\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "create") == 0)
		return create(argv[2]);
	if (argc == 3 && strcmp(argv[1], "attach") == 0)
		return attach(argv[2]);
	fprintf(stderr, "usage: nccl_like create DIR | attach PATH\n");
	return 2;
}
