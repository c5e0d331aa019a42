/* shmguard ls: what the shm roots hold, who made it and who uses it. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "shm_files.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: shmguard ls [--json] [--root DIR]...\n\n"
		"Lists every file under the shm roots (default /dev/shm), and every unlinked file a\n"
		"process still holds open or mapped there, largest first: allocated bytes, size, owner,\n"
		"age, the shim's tag (request, creator and whether it still runs) and the processes\n"
		"that have it open or mapped.  Processes whose /proc cannot be read (others' when not\n"
		"root) are counted as unknown, never taken as not using a file.\n\n"
		"  --root DIR    a shm root to list instead of /dev/shm (repeatable)\n"
		"  --json        the same as JSON\n"
		"  -h, --help    show this help\n\n"
		"Exit status: 0, 1 a root or /proc could not be read, 2 bad usage.\n");
}

static int by_bytes(const void *x, const void *y)
{
	const struct sg_shm_file *a = x, *b = y;
	return (a->bytes < b->bytes) - (a->bytes > b->bytes);
}

static const char *human(uint64_t bytes, char *buf, size_t len)
{
	if (bytes >= 1 << 30)
		snprintf(buf, len, "%.1fG", bytes / (double)(1 << 30));
	else if (bytes >= 1 << 20)
		snprintf(buf, len, "%.1fM", bytes / (double)(1 << 20));
	else if (bytes >= 1 << 10)
		snprintf(buf, len, "%.1fK", bytes / 1024.0);
	else
		snprintf(buf, len, "%llu", (unsigned long long)bytes);
	return buf;
}

static const char *display_name(const struct sg_shm_listing *l, const struct sg_shm_file *f, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s%s", f->root >= 0 ? l->roots[f->root] : "?", f->name ? f->name : "?",
		 f->linked ? "" : " (deleted)");
	return buf;
}

static void print_text(const struct sg_shm_listing *l)
{
	char b1[16], name[600], holders[128], comm[32];
	uint64_t total = 0, held = 0;

	printf("%8s %10s %6s %8s  %-24s %-16s %-22s %s\n", "BYTES", "SIZE", "UID", "AGE", "REQUEST", "CREATOR",
	       "HOLDERS", "NAME");
	for (size_t i = 0; i < l->n; i++) {
		const struct sg_shm_file *f = &l->files[i];
		char creator[32] = "-";
		size_t off = 0;

		if (f->tagged)
			snprintf(creator, sizeof(creator), "%d (%s)", (int)f->tag.pid, sg_creator_state_name(f->creator));
		holders[0] = '\0';
		for (size_t k = 0; k < f->nholders && off < sizeof(holders) - 1; k++) {
			if (k && f->holders[k].pid == f->holders[k - 1].pid)
				continue;
			off += (size_t)snprintf(holders + off, sizeof(holders) - off, "%s%u %s", off ? "," : "",
						f->holders[k].pid, sg_comm(f->holders[k].pid, comm, sizeof(comm)));
		}
		printf("%8s %10lld %6u %7.0fs  %-24s %-16s %-22s %s\n", human(f->bytes, b1, sizeof(b1)),
		       (long long)f->size, (unsigned)f->uid, f->age_s, f->tagged ? f->tag.req : "-", creator,
		       off ? holders : "-", display_name(l, f, name, sizeof(name)));
		total += f->bytes;
		held += f->linked ? 0 : f->bytes;
	}
	printf("total: %zu files, %s allocated", l->n, human(total, b1, sizeof(b1)));
	printf(", %s of it unlinked but still held\n", human(held, b1, sizeof(b1)));
	if (l->holders.unreadable)
		printf("unknown: %u process(es) could not be read, e.g. %u (%s): what they hold is not shown\n",
		       l->holders.unreadable, l->holders.first_unreadable,
		       sg_comm(l->holders.first_unreadable, comm, sizeof(comm)));
}

static int print_json(const struct sg_shm_listing *l)
{
	json_t *files = json_array(), *root;
	char name[600], comm[32];
	uint64_t total = 0;

	for (size_t i = 0; i < l->n; i++) {
		const struct sg_shm_file *f = &l->files[i];
		json_t *holders = json_array();
		for (size_t k = 0; k < f->nholders; k++)
			json_array_append_new(holders, json_pack("{s:i, s:s, s:s}", "pid", (int)f->holders[k].pid, "command",
								 sg_comm(f->holders[k].pid, comm, sizeof(comm)), "via",
								 f->holders[k].mapped ? "mapping" : "fd"));
		json_t *o = json_pack("{s:s, s:b, s:I, s:I, s:i, s:f, s:o}", "path", display_name(l, f, name, sizeof(name)),
				      "linked", f->linked, "size", (json_int_t)f->size, "allocated_bytes",
				      (json_int_t)f->bytes, "uid", (int)f->uid, "age_s", f->age_s, "holders", holders);
		json_object_set_new(o, "tag", f->tagged ? json_pack("{s:s, s:i, s:s}", "request", f->tag.req, "creator_pid",
								    (int)f->tag.pid, "creator",
								    sg_creator_state_name(f->creator))
							: json_null());
		json_array_append_new(files, o);
		total += f->bytes;
	}
	root = json_pack("{s:o, s:I, s:I, s:i}", "files", files, "total_files", (json_int_t)l->n, "total_allocated_bytes",
			 (json_int_t)total, "unreadable_processes", (int)l->holders.unreadable);
	json_dumpf(root, stdout, JSON_INDENT(2));
	putchar('\n');
	json_decref(root);
	return 0;
}

int cmd_ls(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'}, {"root", required_argument, NULL, 'r'}, {"help", no_argument, NULL, 'h'}, {0},
	};
	struct sg_shm_listing l = {0};
	int c, status;
	bool json = false;
	char err[256];

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'r':
			if (cli_add_root("ls", optarg, l.roots, &l.nroots) < 0)
				return EXIT_USAGE;
			break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cli_default_root(l.roots, &l.nroots);
	if (sg_shm_list(&l, err, sizeof(err)) < 0) {
		sg_shm_listing_free(&l);
		return cli_fail(EXIT_FAIL, "ls", "%s", err);
	}
	if (l.n)
		qsort(l.files, l.n, sizeof(*l.files), by_bytes);
	/* Holder pointers survive the sort: they point into the holder list. */
	status = json ? print_json(&l) : (print_text(&l), EXIT_OK);
	sg_shm_listing_free(&l);
	return status;
}
