/* shmguard ls: what the shm roots hold, who made it and who uses it. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "shm_files.h"
#include "text.h"
#include "size.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: shmguard ls [--json [FILE]] [--root DIR]...\n\n"
		"Lists every file under the shm roots (default /dev/shm), and every unlinked file a\n"
		"process still holds open or mapped there, largest first: allocated bytes, size, owner,\n"
		"age, the shim's tag (request, creator and whether it still runs) and the processes\n"
		"that have it open or mapped.  Processes whose /proc cannot be read (others' when not\n"
		"root) are counted as unknown, never taken as not using a file.\n\n"
		"  --root DIR       a shm root to list instead of /dev/shm (repeatable)\n"
		"  --json [FILE]    the same as JSON, into FILE (--json=FILE too; none or -: stdout)\n"
		"  -h, --help       show this help\n"
		"  -V, --version    print the version\n\n"
		"Exit status: 0; 1 a root or /proc could not be read; 2 bad usage.\n");
}

static int by_bytes(const void *x, const void *y)
{
	const struct sg_shm_file *a = x, *b = y;
	return (a->bytes < b->bytes) - (a->bytes > b->bytes);
}

/* root/name, escaped for a terminal, then " (deleted)" for an unlinked file. */
static const char *display_name(const struct sg_shm_listing *l, const struct sg_shm_file *f, char *buf, size_t len)
{
	char path[SG_PATH_MAX + SG_NAME_MAX + 2];

	snprintf(path, sizeof(path), "%s/%s", f->root >= 0 ? l->roots.dir[f->root] : "?", f->name ? f->name : "?");
	sg_text_escape(path, buf, len);
	if (!f->linked)
		strncat(buf, " (deleted)", len - strlen(buf) - 1);
	return buf;
}

static const char *journal_like_name(enum sg_journal_like j)
{
	return j == JOURNAL_LIKE_FOREIGN ? "foreign" : j == JOURNAL_LIKE_UNREAD ? "journal-unread" : NULL;
}

static void print_text(const struct sg_shm_listing *l)
{
	char b1[16], name[SG_ESCAPED_MAX], holders[128], comm[32], esc[SG_ESCAPED_MAX];
	uint64_t total = 0, held = 0;

	printf("%10s %10s %6s %8s  %-24s %-16s %-22s %s\n", "BYTES", "SIZE", "UID", "AGE", "REQUEST", "CREATOR",
	       "HOLDERS", "NAME");
	for (size_t i = 0; i < l->n; i++) {
		const struct sg_shm_file *f = &l->files[i];
		char creator[32] = "-", req[SG_ESCAPED_MAX] = "-";
		size_t off = 0;

		if (f->tagged) {
			snprintf(creator, sizeof(creator), "%d (%s)", (int)f->tag.pid, sg_creator_state_name(f->creator));
			sg_text_escape(f->tag.req, req, sizeof(req));
		} else if (f->journal_like) {
			snprintf(creator, sizeof(creator), "%s", journal_like_name(f->journal_like));
		}
		holders[0] = '\0';
		for (size_t k = 0; k < f->nholders && off < sizeof(holders) - 1; k++) {
			if (k && f->holders[k].pid == f->holders[k - 1].pid)
				continue;
			sg_text_escape(sg_comm(f->holders[k].pid, comm, sizeof(comm)), esc, sizeof(esc));
			off += (size_t)snprintf(holders + off, sizeof(holders) - off, "%s%u %s", off ? "," : "",
						f->holders[k].pid, esc);
		}
		printf("%10s %10lld %6u %7.0fs  %-24s %-16s %-22s %s\n", sg_human_bytes(f->bytes, b1, sizeof(b1)),
		       (long long)f->size, (unsigned)f->uid, f->age_s, req, creator, off ? holders : "-",
		       display_name(l, f, name, sizeof(name)));
		total += f->bytes;
		held += f->linked ? 0 : f->bytes;
	}
	printf("total: %zu %s, %s allocated", SG_PLURAL(l->n, "file", "files"), sg_human_bytes(total, b1, sizeof(b1)));
	printf(", %s of it unlinked but still held\n", sg_human_bytes(held, b1, sizeof(b1)));
	if (l->holders.unreadable)
		printf("unknown: %u %s could not be read, e.g. %u (%s): what they hold is not shown\n",
		       SG_PLURAL(l->holders.unreadable, "process", "processes"), l->holders.first_unreadable,
		       sg_text_escape(sg_comm(l->holders.first_unreadable, comm, sizeof(comm)), esc, sizeof(esc)));
	if (l->journals_foreign)
		printf("foreign: %u %s named like shmguard's ownership journals, not journals it wrote: "
		       "listed, never swept\n",
		       SG_PLURAL(l->journals_foreign, "file", "files"));
	if (l->journals_unread)
		printf("unknown: %u ownership %s not read: more to read than their owner's files in the "
		       "root could need (what they claim shows as untagged)\n",
		       SG_PLURAL(l->journals_unread, "journal", "journals"));
	if (sg_proc_foreign())
		printf("unknown: /proc shows another pid namespace than this process's (/proc/self is not pid %d): "
		       "every creator is shown as unknown\n",
		       (int)getpid());
}

static json_t *file_json(const struct sg_shm_listing *l, const struct sg_shm_file *f)
{
	char path[SG_PATH_MAX + SG_NAME_MAX + 16], comm[32];
	json_t *holders = json_array(), *o, *tag = json_null();

	for (size_t k = 0; k < f->nholders; k++) {
		json_t *h = json_pack("{s:i, s:s}", "pid", (int)f->holders[k].pid, "via",
				      f->holders[k].mapped ? "mapping" : "fd");
		cli_json_set_text(h, "command", sg_comm(f->holders[k].pid, comm, sizeof(comm)));
		json_array_append_new(holders, h);
	}
	if (f->tagged) {
		/* creator_* fields mean the same in ls, sweep and audit: the
		 * process that created the file (its pid, its state here). */
		tag = json_pack("{s:i, s:s}", "creator_pid", (int)f->tag.pid, "creator_state",
				sg_creator_state_name(f->creator));
		cli_json_set_text(tag, "request", f->tag.req);
	}
	/* Only a path: an unlinked file's is the name it had, and "linked"
	 * says it is gone (the text listing shows "(deleted)"). */
	snprintf(path, sizeof(path), "%s/%s", f->root >= 0 ? l->roots.dir[f->root] : "?", f->name ? f->name : "?");
	o = json_pack("{s:b, s:I, s:I, s:i, s:f, s:o, s:o}", "linked", f->linked, "size", (json_int_t)f->size,
		      "allocated_bytes", (json_int_t)f->bytes, "uid", (int)f->uid, "age_s", f->age_s, "holders", holders,
		      "tag", tag);
	cli_json_set_text(o, "path", path);
	cli_json_set_text(o, "name", f->name);
	json_object_set_new(o, "journal_like",
			    f->journal_like ? json_string(journal_like_name(f->journal_like)) : json_null());
	return o;
}

static int print_json(const struct sg_shm_listing *l, struct cli_json_out *out)
{
	int ret;
	json_t *files = json_array(), *root;
	uint64_t total = 0;

	for (size_t i = 0; i < l->n; i++) {
		json_array_append_new(files, file_json(l, &l->files[i]));
		total += l->files[i].bytes;
	}
	root = json_pack("{s:i, s:s, s:o, s:I, s:I, s:i, s:b}", "schema", 2, "shmguard_version", SHMGUARD_VERSION,
			 "files", files, "total_files", (json_int_t)l->n, "total_allocated_bytes", (json_int_t)total,
			 "unreadable_processes", (int)l->holders.unreadable, "proc_of_another_pid_namespace",
			 sg_proc_foreign());
	ret = cli_json_write("ls", root, out);
	json_decref(root);
	return ret < 0 ? EXIT_FAIL : EXIT_OK;
}

int cmd_ls(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", optional_argument, NULL, 'j'}, {"root", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},       {"version", no_argument, NULL, 'V'},
		{0},
	};
	struct sg_shm_listing l = {0};
	int c, status;
	const char *json = NULL;
	struct cli_json_out json_out;
	char err[256];

	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = cli_json_arg(argc, argv); break;
		case 'r':
			if (cli_add_root("ls", &l.roots, optarg) < 0)
				return EXIT_USAGE;
			break;
		case 'h': usage(stdout); return EXIT_OK;
		case 'V': return cli_version();
		default: return cli_try_help(EXIT_USAGE, "ls");
		}
	}
	if (optind < argc)
		return cli_unexpected(EXIT_USAGE, "ls", argv[optind]);
	if (json && cli_json_open("ls", json, &json_out) < 0)
		return EXIT_USAGE;
	cli_default_root(&l.roots);
	if (sg_shm_list(&l, err, sizeof(err)) < 0) {
		sg_shm_listing_free(&l);
		if (json)
			cli_json_discard(&json_out);
		return cli_fail(EXIT_FAIL, "ls", "%s", err);
	}
	if (l.n)
		qsort(l.files, l.n, sizeof(*l.files), by_bytes);
	/* Holder pointers survive the sort: they point into the holder list. */
	status = json ? print_json(&l, &json_out) : (print_text(&l), EXIT_OK);
	sg_shm_listing_free(&l);
	return status;
}
