/* shmguard ls: what the shm roots hold, who made it and who uses it. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "orphan_view.h"
#include "shm_files.h"
#include "shm_mounts.h"
#include "text.h"
#include "size.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: shmguard ls [--json [FILE]] [--root DIR... | --node]\n\n"
		"Lists every file under the shm roots (default /dev/shm), and every unlinked file\n"
		"a process still holds open or mapped there, largest first: allocated bytes,\n"
		"size, owner, age, the shim's tag (request, creator and whether it still runs)\n"
		"and the processes that have it open or mapped. Processes whose /proc cannot be\n"
		"read (others' when not root) are counted as unknown, never taken as not using a\n"
		"file.\n\n"
		"  --root DIR       a shm root to list instead of /dev/shm (repeatable)\n"
		"  --node           every tmpfs mounted at /dev/shm in any mount namespace of the\n"
		"                   machine, each named by a process that reaches it:\n"
		"                   [pid P mnt:N]/dev/shm/NAME (largest first within each\n"
		"                   group of 8 roots); creators of other pid namespaces are\n"
		"                   judged only from the initial pid namespace\n"
		"  --json [FILE]    the same as JSON, into FILE (--json=FILE too;\n"
		"                   none or -: stdout)\n"
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
	char path[SG_PATH_MAX + SG_NAME_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", f->root >= 0 ? l->shown[f->root] : "?", f->name ? f->name : "?");
	sg_text_escape(path, buf, len);
	if (!f->linked)
		strncat(buf, " (deleted)", len - strlen(buf) - 1);
	return buf;
}

static const char *journal_like_name(enum sg_journal_like j)
{
	return j == JOURNAL_LIKE_FOREIGN ? "foreign" : j == JOURNAL_LIKE_UNREAD ? "journal-unread" : NULL;
}

/* What the listings shown so far add up to. */
struct shown {
	size_t files;
	uint64_t total, held;
	unsigned unreadable, journals_foreign, journals_unread;
	uint32_t first_unreadable;
	bool proc_foreign, header;
	unsigned ns_read, ns_unreadable; /* --node: mount namespaces */
	unsigned proc_walks; /* walks of /proc's processes made */
	pid_t ns_first_unreadable;
	json_t *json; /* the files, for --json */
	json_t *untrusted_dirs; /* with --json: the journal directories not read */
};

static void add_up(struct shown *t, struct sg_shm_listing *l)
{
	for (size_t i = 0; i < l->n; i++) {
		t->total += l->files[i].bytes;
		t->held += l->files[i].linked ? 0 : l->files[i].bytes;
	}
	t->files += l->n;
	/* The same /proc each time: its most unreadable processes. */
	if (l->proc->holders.unreadable > t->unreadable) {
		t->unreadable = l->proc->holders.unreadable;
		t->first_unreadable = l->proc->holders.first_unreadable;
	}
	t->journals_foreign += l->journals_foreign;
	t->journals_unread += l->journals_unread;
	for (unsigned r = 0; r < l->roots.n; r++)
		if (l->journal_dir_untrusted[r]) {
			char path[sizeof(l->shown[r]) + sizeof(SG_JOURNAL_DIR) + 1];
			cli_warn_journal_dir_untrusted("ls", l->shown[r]);
			if (t->untrusted_dirs) { /* its path as files[].path gives it */
				json_t *o = json_object();
				snprintf(path, sizeof(path), "%s/" SG_JOURNAL_DIR,
					 l->mount[r] ? l->mount[r]->point : l->roots.dir[r]);
				cli_json_set_text(o, "path", path);
				json_array_append_new(t->untrusted_dirs, o);
			}
		}
	t->proc_foreign |= sg_creators_proc_foreign(&l->proc->creators);
}

/* The creator records of shmguard watch, read once. */
static struct orphan_view records;

static void print_rows(struct shown *t, const struct sg_shm_listing *l)
{
	char b1[16], name[SG_ESCAPED_MAX], holders[128], comm[32], esc[SG_ESCAPED_MAX];

	if (!t->header)
		printf("%10s %10s %6s %8s  %-24s %-16s %-22s %s\n", "BYTES", "SIZE", "UID", "AGE", "REQUEST",
		       "CREATOR", "HOLDERS", "NAME");
	t->header = true;

	for (size_t i = 0; i < l->n; i++) {
		const struct sg_shm_file *f = &l->files[i];
		char creator[32] = "-", req[SG_ESCAPED_MAX] = "-";
		size_t off = 0;

		if (f->tagged) {
			snprintf(creator, sizeof(creator), "%d (%s)", (int)f->tag.pid, sg_creator_state_name(f->creator));
			sg_text_escape(f->tag.req, req, sizeof(req));
		} else if (f->journal_like) {
			snprintf(creator, sizeof(creator), "%s", journal_like_name(f->journal_like));
		} else {
			/* Untagged: the creator shmguard watch recorded, if any. */
			orphan_view_creator(&records, l, f, creator, sizeof(creator));
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
	}
}

static void print_summary(const struct shown *t)
{
	char b1[16], comm[32], esc[SG_ESCAPED_MAX];

	printf("total: %zu %s, %s allocated", SG_PLURAL(t->files, "file", "files"),
	       sg_human_bytes(t->total, b1, sizeof(b1)));
	printf(", %s of it unlinked but still held\n", sg_human_bytes(t->held, b1, sizeof(b1)));
	if (t->unreadable)
		printf("unknown: %u %s could not be read, e.g. %u (%s): what they hold is not shown\n",
		       SG_PLURAL(t->unreadable, "process", "processes"), t->first_unreadable,
		       sg_text_escape(sg_comm(t->first_unreadable, comm, sizeof(comm)), esc, sizeof(esc)));
	if (t->ns_unreadable)
		printf("unknown: %u of %u mount %s could not be read, e.g. pid %d's (%s): their /dev/shm is not "
		       "shown\n",
		       t->ns_unreadable, SG_PLURAL(t->ns_read, "namespace", "namespaces"), (int)t->ns_first_unreadable,
		       sg_text_escape(sg_comm((uint32_t)t->ns_first_unreadable, comm, sizeof(comm)), esc, sizeof(esc)));
	if (t->journals_foreign)
		printf("foreign: %u %s named like shmguard's ownership journals, not journals it wrote: "
		       "listed, never swept\n",
		       SG_PLURAL(t->journals_foreign, "file", "files"));
	if (t->journals_unread)
		printf("unknown: %u ownership %s not read: more to read than their owner's files in the "
		       "root could need (what they claim shows as untagged)\n",
		       SG_PLURAL(t->journals_unread, "journal", "journals"));
	if (t->proc_foreign)
		printf("unknown: /proc shows another pid namespace than this process's (/proc/self is not pid %d): "
		       "every creator is shown as unknown\n",
		       (int)getpid());
}

static json_t *file_json(const struct sg_shm_listing *l, const struct sg_shm_file *f)
{
	char path[SG_PATH_MAX + SG_NAME_MAX + 16], comm[32];
	json_t *holders = json_array(), *o, *tag = json_null(), *root = json_null();
	const struct sg_shm_mount *m = f->root >= 0 ? l->mount[f->root] : NULL;

	for (size_t k = 0; k < f->nholders; k++) {
		json_t *h = json_pack("{s:i, s:s}", "pid", (int)f->holders[k].pid, "via",
				      f->holders[k].mapped ? "mapping" : "fd");
		cli_json_set_text(h, "command", sg_comm(f->holders[k].pid, comm, sizeof(comm)));
		json_array_append_new(holders, h);
	}
	if (f->tagged) {
		/* creator_* fields mean the same in ls, sweep and audit: the
		 * process that created the file (its pid, its state here), and
		 * how that state was found (creator_proof). */
		tag = json_pack("{s:i, s:I, s:I, s:s, s:s}", "creator_pid", (int)f->tag.pid, "creator_pid_namespace",
				(json_int_t)f->tag.pidns, "creator_start_ticks", (json_int_t)f->tag.start_ticks,
				"creator_state", sg_creator_state_name(f->creator), "creator_proof",
				sg_creator_proof_name(f->creator_proof));
		cli_json_set_text(tag, "request", f->tag.req);
	}
	if (m) {
		root = json_pack("{s:i, s:I, s:b}", "pid", (int)m->pid, "mount_namespace", (json_int_t)m->mntns,
				 "this_namespace", m->own_ns);
		cli_json_set_text(root, "mount_point", m->point);
	}
	/* Only a path (as the file's mount namespace sees it): an unlinked
	 * file's is the name it had, and "linked" says it is gone (the text
	 * listing shows "(deleted)"). */
	snprintf(path, sizeof(path), "%s/%s", m ? m->point : f->root >= 0 ? l->roots.dir[f->root] : "?",
		 f->name ? f->name : "?");
	o = json_pack("{s:b, s:I, s:I, s:i, s:f, s:o, s:o, s:o}", "linked", f->linked, "size", (json_int_t)f->size,
		      "allocated_bytes", (json_int_t)f->bytes, "uid", (int)f->uid, "age_s", f->age_s, "holders", holders,
		      "tag", tag, "root", root);
	cli_json_set_text(o, "path", path);
	cli_json_set_text(o, "name", f->name);
	json_object_set_new(o, "creator_record", orphan_view_json(&records, l, f));
	json_object_set_new(o, "journal_like",
			    f->journal_like ? json_string(journal_like_name(f->journal_like)) : json_null());
	return o;
}

static int print_json(const struct shown *t, bool node, struct cli_json_out *out)
{
	int ret;
	json_t *root;

	root = json_pack("{s:i, s:s, s:O, s:I, s:I, s:i, s:b, s:b}", "schema", 2, "shmguard_version",
			 SHMGUARD_VERSION, "files", t->json, "total_files", (json_int_t)t->files,
			 "total_allocated_bytes", (json_int_t)t->total, "unreadable_processes", (int)t->unreadable,
			 "proc_of_another_pid_namespace", t->proc_foreign, "node", node);
	json_object_set(root, "untrusted_journal_dirs", t->untrusted_dirs);
	if (node) {
		json_object_set_new(root, "mount_namespaces", json_integer(t->ns_read));
		json_object_set_new(root, "unreadable_mount_namespaces", json_integer(t->ns_unreadable));
		json_object_set_new(root, "proc_walks", json_integer(t->proc_walks));
	}
	ret = cli_json_write("ls", root, out);
	json_decref(root);
	return ret < 0 ? EXIT_FAIL : EXIT_OK;
}

/* Shows l's rows (sorted) and adds it up. */
static void present(struct shown *t, struct sg_shm_listing *l)
{
	if (l->n)
		qsort(l->files, l->n, sizeof(*l->files), by_bytes);
	/* Holder pointers survive the sort: they point into the holder list. */
	if (t->json)
		for (size_t i = 0; i < l->n; i++)
			json_array_append_new(t->json, file_json(l, &l->files[i]));
	else {
		print_rows(t, l);
		orphan_view_print(&records, l);
	}
	add_up(t, l);
}

/* Lists l (its roots set), shows it and adds it up.  EXIT_OK, or
 * EXIT_FAIL (said). */
static int show(struct shown *t, struct sg_shm_listing *l)
{
	char err[SG_PATH_MAX + 160], esc[SG_ESCAPED_MAX];

	if (sg_shm_list(l, err, sizeof(err)) < 0)
		return cli_fail(EXIT_FAIL, "ls", "%s", sg_text_escape(err, esc, sizeof(esc)));
	t->proc_walks += sg_shm_proc_walks(l->proc);
	present(t, l);
	return EXIT_OK;
}

static void list_failed(const char *err, void *ctx)
{
	char esc[SG_ESCAPED_MAX];

	*(int *)ctx = cli_fail(EXIT_FAIL, "ls", "%s", sg_text_escape(err, esc, sizeof(esc)));
}

/* --node: every /dev/shm of the machine, SG_MAX_ROOTS roots to a listing,
 * /proc read once for them all. */
static int show_node(struct shown *t)
{
	struct sg_shm_mounts ms;
	struct sg_shm_pass pass = {0};
	char err[SG_PATH_MAX + 160], esc[SG_ESCAPED_MAX];
	int status = EXIT_OK, ret = sg_shm_mounts_scan(&ms, NULL, 0);

	if (ret < 0)
		return cli_fail(EXIT_FAIL, "ls", "cannot read /proc: %s", strerror(-ret));
	t->proc_walks++;
	t->ns_read = ms.namespaces;
	t->ns_unreadable = ms.unreadable;
	t->ns_first_unreadable = ms.first_unreadable;
	if (ms.unreadable)
		status = EXIT_FAIL; /* said in the summary: a root not read */
	if ((ret = sg_shm_pass_add_mounts(&pass, &ms, NULL, 0)) < 0)
		status = cli_fail(EXIT_FAIL, "ls", "%s", strerror(-ret));
	else if (sg_shm_pass_list(&pass, list_failed, &status, err, sizeof(err)) < 0)
		status = cli_fail(EXIT_FAIL, "ls", "%s", sg_text_escape(err, esc, sizeof(esc)));
	else
		t->proc_walks += sg_shm_pass_walks(&pass);
	for (size_t i = 0; i < pass.n; i++)
		if (pass.l[i].listed)
			present(t, &pass.l[i]);
	sg_shm_pass_free(&pass);
	sg_shm_mounts_free(&ms);
	return status;
}

int cmd_ls(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", optional_argument, NULL, 'j'}, {"root", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},       {"version", no_argument, NULL, 'V'},
		{"node", no_argument, NULL, 'N'},
		{0},
	};
	struct sg_shm_listing l = {0};
	struct shown t = {0};
	int c, status;
	const char *json = NULL;
	struct cli_json_out json_out;
	bool node = false;

	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = cli_json_arg(argc, argv); break;
		case 'r':
			if (cli_add_root("ls", &l.roots, optarg) < 0)
				return EXIT_USAGE;
			break;
		case 'N': node = true; break;
		case 'h': usage(stdout); return EXIT_OK;
		case 'V': return cli_version();
		default: return cli_try_help(EXIT_USAGE, "ls");
		}
	}
	if (optind < argc)
		return cli_unexpected(EXIT_USAGE, "ls", argv[optind]);
	if (node && l.roots.n)
		return cli_usage_fail(EXIT_USAGE, "ls", "--node lists every /dev/shm of the machine: no --root with it");
	if (json && cli_json_open("ls", json, &json_out) < 0)
		return EXIT_USAGE;
	cli_default_root(&l.roots);
	if (json) {
		t.json = json_array();
		t.untrusted_dirs = json_array();
	}
	orphan_view_load(&records);
	status = node ? show_node(&t) : show(&t, &l);
	sg_shm_listing_free(&l);
	orphan_view_free(&records);
	if (status != EXIT_OK && !node) {
		/* Nothing listed: no report, as before. */
		if (json)
			cli_json_discard(&json_out);
		json_decref(t.json);
		json_decref(t.untrusted_dirs);
		return status;
	}
	if (json) {
		if (print_json(&t, node, &json_out) != EXIT_OK)
			status = EXIT_FAIL;
	} else {
		print_summary(&t);
	}
	json_decref(t.json);
	json_decref(t.untrusted_dirs);
	return status;
}
