/* leakgen: a pipeline stage that leaks a known amount per aborted request,
 * in every shape the auditor must measure right.  Request i (ID PREFIX<i>)
 * makes, in /dev/shm:
 *   PREFIX<i>_0_0                       a segment of an odd size (12345 bytes), all written
 *   PREFIX<i>_0_1                       a sparse file: 1 MiB long, one page written
 *   PREFIX<i>_0_2                       64 KiB reserved with fallocate, nothing written
 *   shm_PREFIX<i>_0_0_lockfile.lock     a zero-byte lock file, flock'ed
 *   PREFIX<i>_0_3 (with --mapped)       8 KiB written through a mapping, then unlinked by
 *                                       this process while it keeps the mapping
 * Every K-th request is aborted: its abort marker is written and its files
 * are left; the others are consumed (files unlinked, mapping dropped).
 *
 *   leakgen --prefix P --requests N --abort-every K --abort-dir D [--mapped] [--wait-stdin]
 *
 * Prints "done" when finished; with --wait-stdin it then keeps its files
 * and mappings until stdin closes. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ODD_SIZE 12345
#define SPARSE_SIZE (1 << 20)
#define FALLOC_SIZE (64 << 10)
#define MAPPED_SIZE 8192

static int fail(const char *what, const char *name)
{
	fprintf(stderr, "leakgen: %s %s: %s\n", what, name, strerror(errno));
	exit(1);
}

static const char *path_of(const char *prefix, int i, const char *fmt)
{
	static char path[512];
	char name[300];

	snprintf(name, sizeof(name), fmt, prefix, i);
	snprintf(path, sizeof(path), "/dev/shm/%s", name);
	return path;
}

static int create(const char *path)
{
	int fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		fail("create", path);
	return fd;
}

static void write_all(int fd, size_t size, const char *path)
{
	char *p;

	if (ftruncate(fd, (off_t)size) < 0)
		fail("ftruncate", path);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		fail("mmap", path);
	memset(p, 0x42, size);
	munmap(p, size);
}

/* Makes request i's files; returns the kept mapping (--mapped) or NULL. */
static void *make_request(const char *prefix, int i, bool mapped)
{
	const char *path;
	char page[4096];
	void *map = NULL;
	int fd;

	path = path_of(prefix, i, "%s%d_0_0");
	fd = create(path);
	write_all(fd, ODD_SIZE, path);
	close(fd);

	path = path_of(prefix, i, "%s%d_0_1");
	fd = create(path);
	memset(page, 0x17, sizeof(page));
	if (ftruncate(fd, SPARSE_SIZE) < 0 || pwrite(fd, page, sizeof(page), SPARSE_SIZE / 2) != sizeof(page))
		fail("sparse", path);
	close(fd);

	path = path_of(prefix, i, "%s%d_0_2");
	fd = create(path);
	if (fallocate(fd, 0, 0, FALLOC_SIZE) < 0)
		fail("fallocate", path);
	close(fd);

	path = path_of(prefix, i, "shm_%s%d_0_0_lockfile.lock");
	fd = create(path);
	if (flock(fd, LOCK_EX) < 0)
		fail("flock", path);
	close(fd);

	if (mapped) {
		path = path_of(prefix, i, "%s%d_0_3");
		fd = create(path);
		if (ftruncate(fd, MAPPED_SIZE) < 0)
			fail("ftruncate", path);
		map = mmap(NULL, MAPPED_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
			fail("mmap", path);
		memset(map, 0x33, MAPPED_SIZE);
		close(fd);
		if (unlink(path) < 0)
			fail("unlink", path);
	}
	return map;
}

static void consume(const char *prefix, int i, void *map)
{
	static const char *const shapes[] = {"%s%d_0_0", "%s%d_0_1", "%s%d_0_2", "shm_%s%d_0_0_lockfile.lock"};

	for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++)
		if (unlink(path_of(prefix, i, shapes[k])) < 0)
			fail("unlink", path_of(prefix, i, shapes[k]));
	if (map)
		munmap(map, MAPPED_SIZE);
}

static void mark(const char *dir, const char *prefix, int i)
{
	char path[600];
	int fd;

	snprintf(path, sizeof(path), "%s/%s%d", dir, prefix, i);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		fail("marker", path);
	close(fd);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"prefix", required_argument, NULL, 'p'},    {"requests", required_argument, NULL, 'n'},
		{"abort-every", required_argument, NULL, 'k'}, {"abort-dir", required_argument, NULL, 'd'},
		{"mapped", no_argument, NULL, 'm'},          {"wait-stdin", no_argument, NULL, 'w'},
		{0},
	};
	const char *prefix = NULL, *dir = NULL;
	int n = 0, k = 0, c;
	bool mapped = false, wait_stdin = false;
	char line[16];

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p': prefix = optarg; break;
		case 'n': n = atoi(optarg); break;
		case 'k': k = atoi(optarg); break;
		case 'd': dir = optarg; break;
		case 'm': mapped = true; break;
		case 'w': wait_stdin = true; break;
		default: return 2;
		}
	}
	if (!prefix || !dir || n < 1 || k < 1) {
		fprintf(stderr, "usage: see the comment at the top of tests/tools/leakgen.c\n");
		return 2;
	}
	for (int i = 0; i < n; i++) {
		void *map = make_request(prefix, i, mapped);
		if (i % k == k - 1)
			mark(dir, prefix, i); /* aborted: its files stay, its mapping too */
		else
			consume(prefix, i, map);
	}
	printf("done\n");
	fflush(stdout);
	if (wait_stdin)
		while (fgets(line, sizeof(line), stdin))
			;
	return 0;
}
